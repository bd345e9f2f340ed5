package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/wafsweep/wafsweep/filter/accel/linkage"
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
		flavors                               []string
		wantAccelerated, wantEngine, wantNoop string
	}{
		{[]string{plan.FlavorEnvoy, plan.FlavorWAF}, "", "", ""},
		// Not an ELF file: the engine cannot be read, and says so.
		{[]string{plan.FlavorWAF, plan.FlavorWAFAccelerated}, fileDigest(files[plan.FlavorWAFAccelerated]), "unreadable", ""},
		{[]string{plan.FlavorEnvoy, plan.FlavorEnvoyNoopModule, plan.FlavorWAF}, "", "", fileDigest(files[plan.FlavorEnvoyNoopModule])},
	}
	for _, tt := range tests {
		v := planVersions(plan.Plan{Flavors: tt.flavors}, files)
		if v.Module != fileDigest(files[plan.FlavorWAF]) || v.ModuleAccelerated != tt.wantAccelerated || v.ModuleAcceleratedEngine != tt.wantEngine || v.ModuleNoop != tt.wantNoop {
			t.Errorf("%v: module %s, accelerated %q (%q), no-op %q; want %s, %q (%q) and %q", tt.flavors, v.Module, v.ModuleAccelerated,
				v.ModuleAcceleratedEngine, v.ModuleNoop, fileDigest(files[plan.FlavorWAF]), tt.wantAccelerated, tt.wantEngine, tt.wantNoop)
		}
	}
	if fileDigest(files[plan.FlavorWAF]) == fileDigest(files[plan.FlavorWAFAccelerated]) || fileDigest(files[plan.FlavorWAF]) == fileDigest(files[plan.FlavorEnvoyNoopModule]) {
		t.Fatal("two different files have one digest")
	}
}

// The engine is read from the accelerated build's file: this test's own
// executable links no Hyperscan, and a build whose engine changed is still
// the same build to resume (Versions.Build), since its digest says so.
func TestVersionsRecordTheAcceleratedEngineOutsideTheIdentity(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	files := builds{plan.FlavorWAF: self, plan.FlavorWAFAccelerated: self}
	v := planVersions(plan.Plan{Flavors: []string{plan.FlavorWAF, plan.FlavorWAFAccelerated}}, files)
	if v.ModuleAcceleratedEngine != linkage.PureGo {
		t.Errorf("engine of %s: %q, want %q", self, v.ModuleAcceleratedEngine, linkage.PureGo)
	}
	before := v
	before.ModuleAcceleratedEngine = ""
	if v.Build() != before.Build() {
		t.Errorf("the engine changes the build's identity: %+v vs %+v", v.Build(), before.Build())
	}
}
