package local_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/target/local"
)

// The envoy-noop-module flavor runs Envoy with the no-op module where
// corazawaf would be, from beside the stock build: Envoy loads it (a module
// it cannot load fails the deployment), and since it inspects nothing a
// request the headers-only tier blocks reaches the backend.
func TestNoopModuleFlavorLoadsTheNoopModule(t *testing.T) {
	module := requireModule(t)
	noop := local.NoopModuleBeside(module)
	if _, err := os.Stat(noop); err != nil {
		t.Fatalf("the no-op module is built beside %s by make build: %v", module, err)
	}
	d, runDir, _ := deploy(t, local.Options{ModulePath: module}, plan.Config{Flavor: plan.FlavorEnvoyNoopModule, Tier: plan.TierNone, Shape: plan.ShapeGet})
	config, err := os.ReadFile(filepath.Join(runDir, "envoy.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(config), noop) || strings.Contains(string(config), filepath.Base(module)) {
		t.Errorf("Envoy's config names another module than %s:\n%s", noop, config)
	}
	if got := probe(t, d, "GET", "/admin/settings", "", ""); got != 200 {
		t.Errorf("GET /admin/settings through the no-op module: %d, want the backend's 200", got)
	}
}
