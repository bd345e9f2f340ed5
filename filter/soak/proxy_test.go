package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
)

// workers is Envoy's --concurrency: the soak exercises the module with
// streams on two worker threads at once.
const workers = 2

// proxy is the Envoy + corazawaf under soak, in front of the backend.
type proxy struct {
	backend *backend.Server
	envoy   *envoyproc.Process
	baseURL string // http://127.0.0.1:PORT
}

// requireOrSkip fails under `make test` (WAFSWEEP_E2E=required) and skips
// with the reason under a plain `go test`.
func requireOrSkip(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("WAFSWEEP_E2E") == "required" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format+" (run `make test` to build it)", args...)
}

// fullCRSConfig is the full-crs tier's file, included by absolute path as a
// sweep does, so the soak runs exactly the rules the sweep measures. extra
// are more top-level settings, as JSON members.
func fullCRSConfig(t *testing.T, root string, extra ...string) string {
	t.Helper()
	return fmt.Sprintf(`{%s"directives":["Include %s"]}`, strings.Join(append(extra, ""), ","),
		filepath.Join(root, "rulesets", "full-crs.conf"))
}

// startProxy starts Envoy with the full CRS and the module's settings as
// the sweep uses them, or with extra settings (see fullCRSConfig).
func startProxy(t *testing.T, extra ...string) *proxy {
	t.Helper()
	if _, err := envoyproc.FindBinary(); err != nil {
		requireOrSkip(t, "no Envoy binary: %v", err)
	}
	root, err := envoyproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	module := os.Getenv("CORAZAWAF_MODULE")
	if module == "" {
		module = filepath.Join(root, "build", "libcorazawaf.so")
	}
	if _, err := os.Stat(module); err != nil {
		requireOrSkip(t, "no corazawaf module at %s: %v", module, err)
	}
	be, err := backend.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	ports, err := envoyproc.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	bootstrap, err := envoyconfig.Build(envoyconfig.Options{
		AdminPort: ports[1], ListenPort: ports[0], UpstreamPort: be.Port(),
		WAF: &envoyconfig.WAFFilter{ModulePath: module, ConfigJSON: fullCRSConfig(t, root, extra...)},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "envoy.json")
	if err := envoyconfig.WriteFile(cfgPath, bootstrap); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	envoy, err := envoyproc.Start(ctx, envoyproc.Options{ConfigPath: cfgPath, LogPath: filepath.Join(dir, "envoy.log"),
		AdminPort: ports[1], Concurrency: workers,
		// The module's Go runtime logs each collection's live heap to
		// stderr, that is Envoy's log: the soak reports it (gcheap_test.go).
		Env: []string{"GODEBUG=gctrace=1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := envoy.Stop(); err != nil {
			t.Errorf("stopping envoy: %v", err)
		}
	})
	return &proxy{backend: be, envoy: envoy, baseURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0])}
}

// stop ends Envoy and the backend now rather than at the end of the test;
// the cleanups registered by startProxy then have nothing left to do.
func (p *proxy) stop(t *testing.T) {
	t.Helper()
	if err := p.envoy.Stop(); err != nil {
		t.Errorf("stopping envoy: %v", err)
	}
	p.backend.Close()
}

// logTail is the end of Envoy's log, for failure messages.
func (p *proxy) logTail() string {
	tail, err := p.envoy.LogTail(60)
	if err != nil {
		return err.Error()
	}
	return tail
}
