package envoyconfig

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
)

// TestWAFBootstrapServes runs the WAF bootstrap for real, with the
// pass-through stub module, and checks requests reach the backend on both a
// plain route and one with per-route config, and that the access log lines
// decode into AccessLogEntry.
func TestWAFBootstrapServes(t *testing.T) {
	bin := envoyBinary(t)
	module := buildStubModule(t)
	be, err := backend.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	ports, err := envoyproc.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	perRoute := `{}`
	opts := Options{
		AdminPort: ports[0], ListenPort: ports[1], UpstreamPort: be.Port(),
		WAF:           &WAFFilter{ModulePath: module, ConfigJSON: `{}`},
		Routes:        []Route{{Prefix: "/static", PerRouteWAF: &perRoute}, {Prefix: "/"}},
		AccessLogPath: filepath.Join(dir, "access.log"),
	}
	config := filepath.Join(dir, "envoy.json")
	if err := WriteFile(config, mustBuild(t, opts)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	envoy, err := envoyproc.Start(ctx, envoyproc.Options{Binary: bin, ConfigPath: config,
		LogPath: filepath.Join(dir, "envoy.log"), AdminPort: opts.AdminPort, FileFlushInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer envoy.Stop()

	paths := []string{"/static/a.css", "/api"}
	for _, path := range paths {
		if status := get(t, opts.ListenPort, path); status != http.StatusOK {
			t.Errorf("GET %s: status %d", path, status)
		}
	}
	if got := be.Stats().Requests; got != int64(len(paths)) {
		t.Errorf("backend saw %d requests, want %d", got, len(paths))
	}
	entries := readAccessLog(t, opts.AccessLogPath, len(paths))
	for i, e := range entries {
		if e.Path != paths[i] || e.Method != http.MethodGet || e.ResponseCode != http.StatusOK ||
			e.ResponseCodeDetails != "via_upstream" || e.Authority != "wafsweep.test" || e.WAF != nil {
			t.Errorf("access log entry %d = %+v", i, e)
		}
	}
}

func get(t *testing.T, port int, path string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "wafsweep.test"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// readAccessLog waits for n lines to be flushed.
func readAccessLog(t *testing.T, path string, n int) []AccessLogEntry {
	t.Helper()
	var entries []AccessLogEntry
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		entries = entries[:0]
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		scanner := bufio.NewScanner(f)
		for scanner.Scan() {
			var e AccessLogEntry
			if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
				t.Fatalf("access log line %q: %v", scanner.Text(), err)
			}
			entries = append(entries, e)
		}
		f.Close()
		if len(entries) >= n {
			return entries
		}
	}
	raw, _ := os.ReadFile(path)
	t.Fatalf("access log has %d entries after 10s, want %d:\n%s", len(entries), n, raw)
	return nil
}
