// Package nginxconfig writes and validates the nginx.conf of the
// nginx-modsecurity flavor: nginx in front of the backend on 127.0.0.1, set
// up to be measured like Envoy (one worker per proxy CPU, keep-alive on both
// sides, no access log, bodies held in memory) with ModSecurity's
// connector loaded from Debian's module.
package nginxconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
)

// Defaults used when the matching Options field is zero.
const (
	// DefaultMaxBodyBytes is client_max_body_size: above the WAF tiers'
	// inspection limit (SecRequestBodyLimit 13107200), so that with
	// ProcessPartial the rest of a large body is forwarded, as through the
	// corazawaf module, instead of nginx answering 413.
	DefaultMaxBodyBytes = 64 << 20
	// DefaultBodyBufferBytes is client_body_buffer_size: the inspection
	// limit plus 1 MiB, as the module raises Envoy's buffer, so inspected
	// bodies stay in memory instead of going to a temporary file. nginx
	// allocates only what a request's Content-Length needs.
	DefaultBodyBufferBytes = 13107200 + 1<<20
	// DefaultWorkerConnections bounds connections per worker (client plus
	// upstream); far above the load generator's 64.
	DefaultWorkerConnections = 4096
	// DefaultErrorLogLevel keeps the hot path quiet like Envoy's "warning":
	// ModSecurity logs denials at "error", rule matches at "info".
	DefaultErrorLogLevel = "warn"
)

// Options describes one nginx instance.
type Options struct {
	// ModulePath is the ModSecurity connector (load_module). Required when
	// RulesFile is set.
	ModulePath string
	// RulesFile is modsecurity_rules_file; empty runs nginx without
	// ModSecurity (a plain reverse proxy).
	RulesFile    string
	ListenPort   int
	UpstreamPort int
	// StatusPort, when set, serves nginx's request counters (stub_status)
	// at StatusPath on loopback, in a server of its own that ModSecurity
	// does not inspect.
	StatusPort int
	// CPUs: one worker per CPU, each pinned to its own CPU. Empty means a
	// single unpinned worker.
	CPUs []int
	// RunDir holds the pid file, the error log and the temporary
	// directories, so nothing is written outside it.
	RunDir string
	// User is the `user` directive: the identity of the workers when nginx
	// starts as root (nginx otherwise switches them to "nobody", who could
	// not write into RunDir). Empty omits the directive; Group defaults to
	// the group named like User.
	User, Group   string
	ErrorLogLevel string
	// HTTP2 makes the listener speak HTTP/2: prior knowledge in clear
	// (nginx then refuses HTTP/1.1 there), ALPN over TLS. The backend is
	// spoken to over HTTP/1.1 either way.
	HTTP2 bool
	// CertFile and KeyFile, both or neither, make the listener terminate
	// TLS (1.2 and 1.3, as Envoy's defaults).
	CertFile, KeyFile string
	MaxBodyBytes      int64
	BodyBufferBytes   int64
	WorkerConnections int
}

// StatusPath is where the status server (Options.StatusPort) answers.
const StatusPath = "/nginx_status"

// Files inside RunDir.
const (
	PIDFileName      = "nginx.pid"
	ErrorLogFileName = "nginx-error.log"
	tempDirName      = "nginx-temp"
)

// PIDFile is where nginx writes its master's pid.
func (o Options) PIDFile() string { return filepath.Join(o.RunDir, PIDFileName) }

// ErrorLog is nginx's (and ModSecurity's) log.
func (o Options) ErrorLog() string { return filepath.Join(o.RunDir, ErrorLogFileName) }

// Workers is the number of worker processes.
func (o Options) Workers() int { return max(len(o.CPUs), 1) }

func (o Options) withDefaults() Options {
	if o.ErrorLogLevel == "" {
		o.ErrorLogLevel = DefaultErrorLogLevel
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.BodyBufferBytes == 0 {
		o.BodyBufferBytes = DefaultBodyBufferBytes
	}
	if o.WorkerConnections == 0 {
		o.WorkerConnections = DefaultWorkerConnections
	}
	return o
}

var errorLogLevels = []string{"debug", "info", "notice", "warn", "error", "crit", "alert", "emerg"}

func (o Options) validate() error {
	var errs []error
	for name, port := range map[string]int{"ListenPort": o.ListenPort, "UpstreamPort": o.UpstreamPort} {
		if port < 1 || port > 65535 {
			errs = append(errs, fmt.Errorf("%s %d out of range 1-65535", name, port))
		}
	}
	if o.StatusPort != 0 && (o.StatusPort < 1 || o.StatusPort > 65535 || o.StatusPort == o.ListenPort || o.StatusPort == o.UpstreamPort) {
		errs = append(errs, fmt.Errorf("StatusPort %d is out of range 1-65535 or another port's", o.StatusPort))
	}
	if o.ListenPort == o.UpstreamPort {
		errs = append(errs, fmt.Errorf("ListenPort and UpstreamPort are both %d", o.ListenPort))
	}
	if o.RulesFile != "" && o.ModulePath == "" {
		errs = append(errs, errors.New("RulesFile without ModulePath: ModSecurity's connector must be loaded"))
	}
	if !filepath.IsAbs(o.RunDir) {
		errs = append(errs, fmt.Errorf("RunDir %q must be an absolute path (nginx resolves relative ones against its prefix)", o.RunDir))
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		errs = append(errs, errors.New("TLS needs both CertFile and KeyFile"))
	}
	for name, p := range map[string]string{"ModulePath": o.ModulePath, "RulesFile": o.RulesFile, "RunDir": o.RunDir, "User": o.User, "Group": o.Group,
		"CertFile": o.CertFile, "KeyFile": o.KeyFile} {
		if strings.ContainsAny(p, " \t\n;{}\"'$#") {
			errs = append(errs, fmt.Errorf("%s %q holds characters nginx.conf would need quoted", name, p))
		}
	}
	seen := map[int]bool{}
	for _, c := range o.CPUs {
		if c < 0 || c >= 1024 || seen[c] {
			errs = append(errs, fmt.Errorf("CPUs %v: %d is out of range or repeated", o.CPUs, c))
		}
		seen[c] = true
	}
	if !slices.Contains(errorLogLevels, o.ErrorLogLevel) {
		errs = append(errs, fmt.Errorf("ErrorLogLevel %q is not one of %s", o.ErrorLogLevel, strings.Join(errorLogLevels, ", ")))
	}
	if o.MaxBodyBytes < 0 || o.BodyBufferBytes < 0 || o.WorkerConnections < 0 {
		errs = append(errs, errors.New("MaxBodyBytes, BodyBufferBytes and WorkerConnections must not be negative"))
	}
	return errors.Join(errs...)
}

// affinityMasks is worker_cpu_affinity's argument: one bit mask per
// worker, CPU 0 rightmost, each worker on its own CPU (nginx's own advice
// for a worker per core). Envoy's workers instead float over the same CPU
// set; either way the proxy owns exactly these CPUs.
func affinityMasks(cpus []int) string {
	width := slices.Max(cpus) + 1
	masks := make([]string, len(cpus))
	for i, c := range cpus {
		bits := []byte(strings.Repeat("0", width))
		bits[width-1-c] = '1'
		masks[i] = string(bits)
	}
	return strings.Join(masks, " ")
}

// Build returns the nginx.conf text.
func Build(o Options) (string, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return "", fmt.Errorf("nginxconfig: invalid options: %w", err)
	}
	data := struct {
		Options
		Workers    int
		Affinity   string
		PIDFile    string
		ErrorLog   string
		TempDir    string
		StatusPath string
	}{Options: o, Workers: o.Workers(), PIDFile: o.PIDFile(), ErrorLog: o.ErrorLog(), TempDir: filepath.Join(o.RunDir, tempDirName), StatusPath: StatusPath}
	if len(o.CPUs) > 0 {
		data.Affinity = affinityMasks(o.CPUs)
	}
	var b strings.Builder
	if err := confTemplate.Execute(&b, data); err != nil {
		return "", fmt.Errorf("nginxconfig: %w", err)
	}
	return b.String(), nil
}

// Write builds the configuration, writes it to path and creates the
// temporary directories' parent (nginx creates only their last level).
func Write(path string, o Options) error {
	text, err := Build(o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(o.RunDir, tempDirName), 0o755); err != nil {
		return fmt.Errorf("nginxconfig: %w", err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("nginxconfig: %w", err)
	}
	return nil
}

// confTemplate is the whole nginx.conf. Why each non-default setting:
//   - daemon off, master_process on: the sweep owns the master as its
//     child (stop by pid, Pdeathsig) and nginx runs as in production.
//   - keepalive_requests: nginx >= 1.19.10 closes a client connection after
//     1000 requests; the load generator would then reconnect, which a sweep
//     step counts as invalid. Envoy sets no such limit.
//   - upstream keepalive with HTTP/1.1 and an empty Connection header: the
//     backend connections are reused, as Envoy's pool reuses them.
//   - reuseport: the kernel spreads connections over the workers, as
//     Envoy's listeners do by default.
//   - proxy buffering on (nginx's default) with buffers that hold the
//     backend's small answers in memory.
//   - keepalive_requests also bounds requests per HTTP/2 connection
//     (http2_max_requests is obsolete since 1.19.7).
//   - ssl_protocols TLSv1.2 TLSv1.3: what Envoy accepts by default (1.22
//     still allows TLS 1.0 and 1.1).
var confTemplate = template.Must(template.New("nginx.conf").Parse(`# Written by wafsweep (package nginxconfig).
{{- if .ModulePath}}
load_module {{.ModulePath}};
{{- end}}
daemon off;
master_process on;
{{- if .User}}
user {{.User}}{{if .Group}} {{.Group}}{{end}};
{{- end}}
worker_processes {{.Workers}};
{{- if .Affinity}}
worker_cpu_affinity {{.Affinity}};
{{- end}}
worker_shutdown_timeout 5s;
pid {{.PIDFile}};
error_log {{.ErrorLog}} {{.ErrorLogLevel}};

events {
    worker_connections {{.WorkerConnections}};
}

http {
    access_log off;
    server_tokens off;
    client_body_temp_path {{.TempDir}}/client_body;
    proxy_temp_path {{.TempDir}}/proxy;
    fastcgi_temp_path {{.TempDir}}/fastcgi;
    uwsgi_temp_path {{.TempDir}}/uwsgi;
    scgi_temp_path {{.TempDir}}/scgi;

    keepalive_timeout 75s;
    keepalive_requests 1000000;
    client_max_body_size {{.MaxBodyBytes}};
    client_body_buffer_size {{.BodyBufferBytes}};

    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_set_header Host $http_host;
    proxy_buffering on;
    proxy_buffer_size 16k;
    proxy_buffers 8 16k;
    proxy_request_buffering on;

    upstream backend {
        server 127.0.0.1:{{.UpstreamPort}};
        keepalive 128;
        keepalive_requests 1000000;
        keepalive_timeout 75s;
    }

    server {
        listen 127.0.0.1:{{.ListenPort}} reuseport{{if .CertFile}} ssl{{end}}{{if .HTTP2}} http2{{end}};
{{- if .CertFile}}
        ssl_certificate {{.CertFile}};
        ssl_certificate_key {{.KeyFile}};
        ssl_protocols TLSv1.2 TLSv1.3;
{{- end}}
{{- if .RulesFile}}
        modsecurity on;
        modsecurity_rules_file {{.RulesFile}};
{{- end}}
        location / {
            proxy_pass http://backend;
        }
    }
{{- if .StatusPort}}

    server {
        listen 127.0.0.1:{{.StatusPort}};
        location = {{.StatusPath}} {
            stub_status;
        }
    }
{{- end}}
}
`))
