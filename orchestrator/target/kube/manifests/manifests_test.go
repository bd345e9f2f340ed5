package manifests

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
)

// manifests/base is what the orchestrator applies, rendered by the same
// code. Envoy bootstraps are compared as JSON values: protojson varies its
// whitespace between builds on purpose.
func TestBaseMatchesTheOrchestrator(t *testing.T) {
	root, err := envoyproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(root, "manifests", "base")
	files, err := Files(filepath.Join(root, "rulesets", "headers-only.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("WAFSWEEP_UPDATE_MANIFESTS") == "1" {
		if err := Write(base, files); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(base, name))
		if err != nil {
			t.Errorf("%s: %v (WAFSWEEP_UPDATE_MANIFESTS=1 go test ./orchestrator/target/kube/manifests writes it)", name, err)
			continue
		}
		if filepath.Ext(name) == ".json" {
			if !sameJSON(t, got, want) {
				t.Errorf("%s differs from the orchestrator's bootstrap: regenerate with WAFSWEEP_UPDATE_MANIFESTS=1", name)
			}
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what the orchestrator applies: regenerate with WAFSWEEP_UPDATE_MANIFESTS=1", name)
		}
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
