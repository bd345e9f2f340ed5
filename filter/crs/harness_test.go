package crs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
)

// requireOrSkip fails under `make test` (WAFSWEEP_E2E=required) and skips
// with the reason under a plain `go test`. Same contract as filter/e2e.
func requireOrSkip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("WAFSWEEP_E2E") == "required" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format+" (run `make test` to build it)", args...)
}

// modulePath finds the release module: $CORAZAWAF_MODULE, else
// build/libcorazawaf.so in the repository.
func modulePath(t testing.TB) string {
	t.Helper()
	path := os.Getenv("CORAZAWAF_MODULE")
	if path == "" {
		root, err := envoyproc.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(root, "build", "libcorazawaf.so")
	}
	if _, err := os.Stat(path); err != nil {
		requireOrSkip(t, "no corazawaf module at %s: %v", path, err)
	}
	return path
}

// proxy is Envoy with corazawaf in front of the reflecting backend.
type proxy struct {
	port    int    // Envoy's listener on 127.0.0.1
	logPath string // Envoy's own log: where the module writes matched rules
	// accessLogPath is Envoy's access log (envoyconfig.AccessLogEntry
	// lines), if asked for.
	accessLogPath string
	envoy         *envoyproc.Process
}

// startProxy starts Envoy with filterConfig in front of upstreamPort. Both
// are on 127.0.0.1; Envoy is stopped when the test ends.
func startProxy(t testing.TB, filterConfig string, upstreamPort int) *proxy {
	t.Helper()
	return startProxyWith(t, modulePath(t), filterConfig, upstreamPort)
}

// startProxyWith is startProxy with a given module, so one test can run
// the suite against several builds (stock and accelerated).
func startProxyWith(t testing.TB, module, filterConfig string, upstreamPort int) *proxy {
	t.Helper()
	return startEnvoy(t, envoySetup{module: module, filterConfig: filterConfig, upstreamPort: upstreamPort})
}

// envoySetup is what startEnvoy needs.
type envoySetup struct {
	module, filterConfig string
	upstreamPort         int
	// accessLog adds envoyconfig's JSON access log (proxy.accessLogPath),
	// flushed every 100 ms, for tests that read response code details.
	accessLog bool
	// flavor, when set, is the module flavor Envoy loads instead of
	// module (its library, names and environment).
	flavor *moduleflavor.Spec
}

func startEnvoy(t testing.TB, s envoySetup) *proxy {
	t.Helper()
	module, filterConfig, upstreamPort := s.module, s.filterConfig, s.upstreamPort
	if _, err := envoyproc.FindBinary(); err != nil {
		requireOrSkip(t, "no Envoy binary: %v", err)
	}
	ports, err := envoyproc.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if keep := os.Getenv("CRS_KEEP_LOG_DIR"); keep != "" {
		dir = keep // for post-mortems: t.TempDir is removed with the test
	}
	p := &proxy{port: ports[0], logPath: filepath.Join(dir, "envoy.log")}
	var flush time.Duration
	if s.accessLog {
		p.accessLogPath = filepath.Join(dir, "access.log")
		// Envoy flushes access logs every 10 s by default.
		flush = 100 * time.Millisecond
	}
	waf := &envoyconfig.WAFFilter{ModulePath: module, ConfigJSON: filterConfig}
	var env []string
	if f := s.flavor; f != nil {
		waf = &envoyconfig.WAFFilter{ModulePath: f.LibraryPath, ModuleName: f.ModuleName, FilterName: f.FilterName,
			ConfigJSON: filterConfig, ConfigAsStruct: f.AsStruct()}
		env = f.Env
	}
	bootstrap, err := envoyconfig.Build(envoyconfig.Options{
		AdminPort: ports[1], ListenPort: p.port, UpstreamPort: upstreamPort, WAF: waf, AccessLogPath: p.accessLogPath,
	})
	if err != nil {
		t.Fatalf("building the Envoy bootstrap: %v", err)
	}
	cfgPath := filepath.Join(dir, "envoy.json")
	if err := envoyconfig.WriteFile(cfgPath, bootstrap); err != nil {
		t.Fatalf("writing the Envoy bootstrap: %v", err)
	}
	// Building the full CRS at start-up takes a few seconds on a busy
	// machine; the default start timeout is generous enough.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p.envoy, err = envoyproc.Start(ctx, envoyproc.Options{
		ConfigPath: cfgPath, LogPath: p.logPath, AdminPort: ports[1],
		// go-ftw sends one request at a time, so one worker is enough, and
		// it keeps the log lines of consecutive requests in order.
		Concurrency: 1,
		// Matched rules are logged at info (warning for severe ones).
		LogLevel:          "info",
		StartTimeout:      90 * time.Second,
		FileFlushInterval: flush,
		Env:               env,
	})
	if err != nil {
		t.Fatalf("starting Envoy with the CRS test configuration: %v", err)
	}
	t.Cleanup(func() {
		if err := p.envoy.Stop(); err != nil {
			t.Errorf("stopping Envoy: %v", err)
		}
	})
	return p
}

func (p *proxy) logTail(lines int) string {
	tail, err := p.envoy.LogTail(lines)
	if err != nil {
		return fmt.Sprintf("(Envoy log unreadable: %v)", err)
	}
	return tail
}

// failIfEnvoyDied reports an Envoy that exited during the suite with the end
// of its log (where a crash's backtrace is), instead of thousands of test
// failures that only say the port refused connections.
func (p *proxy) failIfEnvoyDied(t *testing.T) {
	t.Helper()
	if !p.envoy.Exited() {
		return
	}
	tail, err := p.envoy.LogTail(80)
	if err != nil {
		tail = err.Error()
	}
	t.Fatalf("Envoy exited during the CRS suite (%v); its log ends:\n%s", p.envoy.ExitError(), tail)
}
