package envoyconfig

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/tlscert"
)

// envoyBinary returns the real Envoy or skips the test, saying why.
func envoyBinary(t *testing.T) string {
	t.Helper()
	bin, err := envoyproc.FindBinary()
	if err != nil {
		t.Skipf("skipping: no Envoy binary: %v", err)
	}
	return bin
}

// buildStubModule compiles testdata/stubmodule.c, a pass-through module, so
// Envoy can load a WAF bootstrap without the real libcorazawaf.so.
func buildStubModule(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("a C compiler is needed to build the stub dynamic module: %v", err)
	}
	out := filepath.Join(t.TempDir(), "libcorazawaf.so")
	cmd := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", out, filepath.Join("testdata", "stubmodule.c"))
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build stub module: %v\n%s", err, msg)
	}
	return out
}

// validateWithEnvoy runs `envoy --mode validate` on b and returns its output.
func validateWithEnvoy(t *testing.T, bin string, o Options) (string, error) {
	t.Helper()
	b := mustBuild(t, o)
	path := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := WriteFile(path, b); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--mode", "validate", "-c", path,
		"--disable-hot-restart", "-l", "warning").CombinedOutput()
	return string(out), err
}

func TestEnvoyAcceptsBootstraps(t *testing.T) {
	bin := envoyBinary(t)
	module := buildStubModule(t)
	perRoute := `{"directives":"SecRuleEngine Off"}`
	withWAF := func(o Options) Options {
		o.WAF = &WAFFilter{ModulePath: module, ConfigJSON: `{}`}
		return o
	}
	full := baseOptions()
	full.AccessLogPath = filepath.Join(t.TempDir(), "access.log")
	full.StreamIdleTimeout, full.RouteTimeout = time.Minute, 30*time.Second
	full.Routes = []Route{{Prefix: "/static", PerRouteWAF: &perRoute}, {Prefix: "/"}}
	certs, err := tlscert.Generate(t.TempDir(), tlscert.Loopback("wafsweep.test"))
	if err != nil {
		t.Fatal(err)
	}
	withTLS := withWAF(baseOptions())
	withTLS.TLS = &TLSFiles{CertChain: certs.Cert, PrivateKey: certs.Key}

	tests := []struct {
		name string
		opts Options
	}{
		{"vanilla", baseOptions()},
		{"waf", withWAF(baseOptions())},
		{"waf with per-route config, access log and timeouts", withWAF(full)},
		{"waf terminating TLS", withTLS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := validateWithEnvoy(t, bin, tt.opts)
			if err != nil || !strings.Contains(out, "OK") {
				t.Fatalf("envoy rejected the bootstrap: %v\n%s", err, out)
			}
		})
	}
}

// TestEnvoyValidateLoadsTheModule shows the WAF case above is meaningful:
// validate mode really loads the module, so a missing one is an error.
func TestEnvoyValidateLoadsTheModule(t *testing.T) {
	bin := envoyBinary(t)
	o := wafOptions()
	o.WAF.ModulePath = filepath.Join(t.TempDir(), "missing.so")
	out, err := validateWithEnvoy(t, bin, o)
	if err == nil || !strings.Contains(out, "Failed to load dynamic module") {
		t.Fatalf("err = %v, output:\n%s\nwant a module load failure", err, out)
	}
}
