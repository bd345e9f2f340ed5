package local_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/target/local"
)

// The module's Go runtime reads its knobs only from the plan: a GODEBUG
// in the environment of whoever runs the sweep does not reach Envoy (the
// figures would change with no trace in the metadata), the plan's does.
// GODEBUG=gctrace=1 shows: the runtime then logs each collection, and
// loading a WAF config ends with one.
func TestEnvoyGetsTheGoRuntimeKnobsOnlyFromThePlan(t *testing.T) {
	module := requireModule(t)
	t.Setenv("GODEBUG", "gctrace=1")
	gcLine := regexp.MustCompile(`(?m)^gc \d+ @`)
	for _, tc := range []struct {
		name     string
		envoyEnv []string
		traced   bool
	}{
		{"the shell's GODEBUG alone", nil, false},
		{"the plan's GODEBUG", []string{"GODEBUG=gctrace=1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan.Default()
			p.EnvoyEnv = tc.envoyEnv
			d, runDir, stop := deploy(t, local.Options{ModulePath: module, EnvoyEnv: p.EnvoyEnviron()},
				plan.Config{Flavor: plan.FlavorWAF, Tier: plan.TierHeadersOnly, Shape: plan.ShapeGet})
			if got := probe(t, d, "GET", "/", "", ""); got != 200 {
				t.Errorf("GET: %d", got)
			}
			stop() // Envoy's log is complete once it has exited
			log, err := os.ReadFile(filepath.Join(runDir, "envoy.log"))
			if err != nil {
				t.Fatal(err)
			}
			if traced := gcLine.Match(log); traced != tc.traced {
				t.Errorf("collections logged: %v, want %v\n%s", traced, tc.traced, log)
			}
		})
	}
}

// requireModule returns the corazawaf module the tests load, skipping
// without it and Envoy, except under `make test` (WAFSWEEP_E2E=required).
func requireModule(t *testing.T) string {
	t.Helper()
	module := os.Getenv("CORAZAWAF_MODULE")
	if module == "" {
		module = filepath.Join(repoRoot(t), "build", "libcorazawaf.so")
	}
	_, envoyErr := envoyproc.FindBinary()
	_, moduleErr := os.Stat(module)
	if envoyErr != nil || moduleErr != nil {
		if os.Getenv("WAFSWEEP_E2E") == "required" {
			t.Fatalf("real Envoy and module needed: %v %v", envoyErr, moduleErr)
		}
		t.Skipf("real Envoy and module needed (make test builds them): %v %v", envoyErr, moduleErr)
	}
	return module
}
