package nginxconfig

import (
	"strings"
	"testing"
)

func baseOptions() Options {
	return Options{
		ModulePath: DebianModulePath, RulesFile: "/run/x/modsecurity/modsecurity.conf",
		ListenPort: 10000, UpstreamPort: 8080, CPUs: []int{1}, RunDir: "/run/x",
	}
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*Options)
		want    []string
		notWant []string
	}{
		{
			name:   "WAF in front of the backend, one pinned worker",
			change: func(*Options) {},
			want: []string{
				"load_module /usr/lib/nginx/modules/ngx_http_modsecurity_module.so;\n",
				"daemon off;\n", "master_process on;\n",
				"worker_processes 1;\n", "worker_cpu_affinity 10;\n",
				"pid /run/x/nginx.pid;\n", "error_log /run/x/nginx-error.log warn;\n",
				"access_log off;\n",
				"listen 127.0.0.1:10000 reuseport;\n",
				"server 127.0.0.1:8080;\n", "keepalive 128;\n", "proxy_http_version 1.1;\n", "proxy_set_header Connection \"\";\n",
				"keepalive_requests 1000000;\n",
				"modsecurity on;\n", "modsecurity_rules_file /run/x/modsecurity/modsecurity.conf;\n",
				"client_max_body_size 67108864;\n", "client_body_buffer_size 14155776;\n",
				"client_body_temp_path /run/x/nginx-temp/client_body;\n",
			},
			notWant: []string{"user ", "http2", "ssl", "0.0.0.0"},
		},
		{
			name:    "h2c",
			change:  func(o *Options) { o.HTTP2 = true },
			want:    []string{"listen 127.0.0.1:10000 reuseport http2;\n"},
			notWant: []string{"ssl"},
		},
		{
			name:   "h2 over TLS",
			change: func(o *Options) { o.HTTP2, o.CertFile, o.KeyFile = true, "/tmp/t/server.pem", "/tmp/t/server-key.pem" },
			want: []string{"listen 127.0.0.1:10000 reuseport ssl http2;\n", "ssl_certificate /tmp/t/server.pem;\n",
				"ssl_certificate_key /tmp/t/server-key.pem;\n", "ssl_protocols TLSv1.2 TLSv1.3;\n"},
		},
		{
			name:    "HTTP/1.1 over TLS",
			change:  func(o *Options) { o.CertFile, o.KeyFile = "/tmp/t/server.pem", "/tmp/t/server-key.pem" },
			want:    []string{"listen 127.0.0.1:10000 reuseport ssl;\n"},
			notWant: []string{"http2"},
		},
		{
			name:    "one worker per CPU, each on its own",
			change:  func(o *Options) { o.CPUs = []int{2, 3, 5} },
			want:    []string{"worker_processes 3;\n", "worker_cpu_affinity 000100 001000 100000;\n"},
			notWant: []string{"worker_processes 1;"},
		},
		{
			name:    "no CPUs: one unpinned worker",
			change:  func(o *Options) { o.CPUs = nil },
			want:    []string{"worker_processes 1;\n"},
			notWant: []string{"worker_cpu_affinity"},
		},
		{
			name:    "plain nginx without ModSecurity",
			change:  func(o *Options) { o.ModulePath, o.RulesFile = "", "" },
			notWant: []string{"load_module", "modsecurity"},
		},
		{
			name:   "workers keep the sweep's identity when started as root",
			change: func(o *Options) { o.User, o.Group = "sweeper", "staff" },
			want:   []string{"user sweeper staff;\n"},
		},
		{
			name: "explicit sizes and log level",
			change: func(o *Options) {
				o.ErrorLogLevel, o.MaxBodyBytes, o.BodyBufferBytes, o.WorkerConnections = "info", 1000, 500, 64
			},
			want: []string{"error_log /run/x/nginx-error.log info;\n", "client_max_body_size 1000;\n", "client_body_buffer_size 500;\n", "worker_connections 64;\n"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions()
			tc.change(&o)
			got, err := Build(o)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.want {
				if !strings.Contains(got, s) {
					t.Errorf("config lacks %q:\n%s", s, got)
				}
			}
			for _, s := range tc.notWant {
				if strings.Contains(got, s) {
					t.Errorf("config has %q:\n%s", s, got)
				}
			}
			if strings.Count(got, "{") != strings.Count(got, "}") {
				t.Errorf("unbalanced braces:\n%s", got)
			}
		})
	}
}

func TestBuildRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*Options)
		wantErr string
	}{
		{"port out of range", func(o *Options) { o.ListenPort = 0 }, "ListenPort 0 out of range"},
		{"same ports", func(o *Options) { o.UpstreamPort = o.ListenPort }, "are both 10000"},
		{"rules without the module", func(o *Options) { o.ModulePath = "" }, "RulesFile without ModulePath"},
		{"relative run dir", func(o *Options) { o.RunDir = "run" }, "must be an absolute path"},
		{"path nginx would split", func(o *Options) { o.RulesFile = "/my rules/x.conf" }, "need quoted"},
		{"repeated CPU", func(o *Options) { o.CPUs = []int{1, 1} }, "out of range or repeated"},
		{"negative CPU", func(o *Options) { o.CPUs = []int{-1} }, "out of range or repeated"},
		{"log level", func(o *Options) { o.ErrorLogLevel = "loud" }, "ErrorLogLevel \"loud\""},
		{"negative size", func(o *Options) { o.MaxBodyBytes = -1 }, "must not be negative"},
		{"certificate without key", func(o *Options) { o.CertFile = "/tmp/t/server.pem" }, "both CertFile and KeyFile"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions()
			tc.change(&o)
			if _, err := Build(o); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestAffinityMasks(t *testing.T) {
	tests := []struct {
		cpus []int
		want string
	}{
		{[]int{0}, "1"},
		{[]int{1}, "10"},
		{[]int{0, 1}, "01 10"},
		{[]int{3, 1}, "1000 0010"},
	}
	for _, tc := range tests {
		if got := affinityMasks(tc.cpus); got != tc.want {
			t.Errorf("affinityMasks(%v) = %q, want %q", tc.cpus, got, tc.want)
		}
	}
}

func TestRunArgs(t *testing.T) {
	got := strings.Join(ValidateArgs("/run/x/nginx.conf", "/run/x/nginx-error.log"), " ")
	if want := "-t -q -p /run/x/ -c /run/x/nginx.conf -e /run/x/nginx-error.log"; got != want {
		t.Errorf("ValidateArgs = %q, want %q", got, want)
	}
}

func TestFindNamesTheFix(t *testing.T) {
	t.Setenv(BinaryEnvVar, "/nonexistent/nginx")
	t.Setenv(ModuleEnvVar, "/nonexistent/module.so")
	_, err := Find()
	if err == nil {
		t.Fatal("Find succeeded with both overrides missing")
	}
	for _, want := range []string{"/nonexistent/nginx", "/nonexistent/module.so", "make nginx-peer", "apt-get install nginx libnginx-mod-http-modsecurity"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
