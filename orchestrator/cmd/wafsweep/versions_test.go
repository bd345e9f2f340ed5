package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// builds maps a flavor to its module file, as the local target does.
type builds map[string]string

func (b builds) ModulePath(flavor string) string { return b[flavor] }

func TestVersionsRecordTheOtherModulesWhenTheyAreLoaded(t *testing.T) {
	dir := t.TempDir()
	files := builds{plan.FlavorWAF: filepath.Join(dir, "stock.so"), plan.FlavorWAFAccelerated: filepath.Join(dir, "accelerated.so"),
		plan.FlavorEnvoyNoopModule: filepath.Join(dir, "noop.so")}
	for _, path := range files {
		if err := os.WriteFile(path, []byte(path), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		flavors                   []string
		wantAccelerated, wantNoop string
	}{
		{[]string{plan.FlavorEnvoy, plan.FlavorWAF}, "", ""},
		{[]string{plan.FlavorWAF, plan.FlavorWAFAccelerated}, fileDigest(files[plan.FlavorWAFAccelerated]), ""},
		{[]string{plan.FlavorEnvoy, plan.FlavorEnvoyNoopModule, plan.FlavorWAF}, "", fileDigest(files[plan.FlavorEnvoyNoopModule])},
	}
	for _, tt := range tests {
		v := planVersions(plan.Plan{Flavors: tt.flavors}, files)
		if v.Module != fileDigest(files[plan.FlavorWAF]) || v.ModuleAccelerated != tt.wantAccelerated || v.ModuleNoop != tt.wantNoop {
			t.Errorf("%v: module %s, accelerated %q, no-op %q; want %s, %q and %q", tt.flavors, v.Module, v.ModuleAccelerated, v.ModuleNoop,
				fileDigest(files[plan.FlavorWAF]), tt.wantAccelerated, tt.wantNoop)
		}
	}
	if fileDigest(files[plan.FlavorWAF]) == fileDigest(files[plan.FlavorWAFAccelerated]) || fileDigest(files[plan.FlavorWAF]) == fileDigest(files[plan.FlavorEnvoyNoopModule]) {
		t.Fatal("two different files have one digest")
	}
}
