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

func TestVersionsRecordTheAcceleratedBuildWhenItIsLoaded(t *testing.T) {
	dir := t.TempDir()
	files := builds{plan.FlavorWAF: filepath.Join(dir, "stock.so"), plan.FlavorWAFAccelerated: filepath.Join(dir, "accelerated.so")}
	for _, path := range files {
		if err := os.WriteFile(path, []byte(path), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		flavors         []string
		wantAccelerated string
	}{
		{[]string{plan.FlavorEnvoy, plan.FlavorWAF}, ""},
		{[]string{plan.FlavorWAF, plan.FlavorWAFAccelerated}, fileDigest(files[plan.FlavorWAFAccelerated])},
	}
	for _, tt := range tests {
		v := planVersions(plan.Plan{Flavors: tt.flavors}, files)
		if v.Module != fileDigest(files[plan.FlavorWAF]) || v.ModuleAccelerated != tt.wantAccelerated {
			t.Errorf("%v: module %s, accelerated %q; want %s and %q", tt.flavors, v.Module, v.ModuleAccelerated,
				fileDigest(files[plan.FlavorWAF]), tt.wantAccelerated)
		}
	}
	if fileDigest(files[plan.FlavorWAF]) == fileDigest(files[plan.FlavorWAFAccelerated]) {
		t.Fatal("two different files have one digest")
	}
}
