package e2e

import (
	"encoding/json"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor/moduleflavortest"
)

// flavorProxyOptions are the options that run spec's module with the
// directives of a corazawaf config (its "directives" list).
func flavorProxyOptions(t testing.TB, spec moduleflavor.Spec, corazawafConfig string) proxyOptions {
	t.Helper()
	var cfg struct{ Directives []string }
	if err := json.Unmarshal([]byte(corazawafConfig), &cfg); err != nil {
		t.Fatal(err)
	}
	return proxyOptions{config: moduleflavortest.Config(t, spec, cfg.Directives), module: spec.LibraryPath,
		moduleName: spec.ModuleName, filterName: spec.FilterName, asStruct: spec.AsStruct(), env: spec.Env}
}
