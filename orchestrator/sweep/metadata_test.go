package sweep

import (
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// A sweep directory remembers the identity of its setup: resuming it with
// another one (a rebuilt module under the same --sweep-id, say) is refused
// with what changed, while the same setup, or a directory that predates
// identities, resumes. So does one on another processor: the figures of
// two machines would be mixed.
func TestResumeRefusesAnotherSetup(t *testing.T) {
	dir := t.TempDir()
	base := Options{Plan: plan.Default(), Target: deadTarget{}, SweepID: "s", OutDir: dir, Identity: "aaaa",
		Versions: dataset.Versions{Module: "sha256:1111", Envoy: "1.40.0"}}
	if _, err := startMetadata(base); err != nil {
		t.Fatal(err)
	}
	if _, err := startMetadata(base); err != nil {
		t.Fatalf("the same setup must resume: %v", err)
	}
	recommitted := base
	recommitted.Versions.WafsweepCommit = "abc"
	if _, err := startMetadata(recommitted); err != nil {
		t.Fatalf("a wafsweep commit alone must resume: %v", err)
	}

	rebuilt := base
	rebuilt.Identity, rebuilt.Versions.Module = "bbbb", "sha256:2222"
	_, err := startMetadata(rebuilt)
	if err == nil || !strings.Contains(err.Error(), "the builds") || !strings.Contains(err.Error(), "--sweep-id") {
		t.Fatalf("a rebuilt module resumed the sweep: %v", err)
	}
	replanned := base
	replanned.Identity = "cccc"
	replanned.Plan.Rounds = 2
	if _, err := startMetadata(replanned); err == nil || !strings.Contains(err.Error(), "the plan") {
		t.Fatalf("another plan resumed the sweep: %v", err)
	}

	// The same setup on another processor (one no machine has) mixes two machines.
	moved := t.TempDir()
	m := dataset.Metadata{SchemaVersion: dataset.SchemaVersion, SweepID: "s", Plan: base.Plan, Identity: base.Identity,
		CPUModel: "no such processor", Cores: 3}
	if err := dataset.WriteMetadata(moved+"/"+MetadataFile, m); err != nil {
		t.Fatal(err)
	}
	elsewhere := base
	elsewhere.OutDir = moved
	if _, err := startMetadata(elsewhere); err == nil || !strings.Contains(err.Error(), "the processor (3 x no such processor, now ") {
		t.Fatalf("a sweep measured on another processor resumed: %v", err)
	}

	// Metadata from before identities were recorded takes this run's.
	old := t.TempDir()
	m = dataset.Metadata{SchemaVersion: dataset.SchemaVersion, SweepID: "s", Plan: base.Plan}
	if err := dataset.WriteMetadata(old+"/"+MetadataFile, m); err != nil {
		t.Fatal(err)
	}
	legacy := base
	legacy.OutDir = old
	got, err := startMetadata(legacy)
	if err != nil || got.Identity != "aaaa" {
		t.Fatalf("a sweep without an identity: %v, identity %q; want it resumed and recorded", err, got.Identity)
	}
}

// The accelerated build's engine is a reading of the build, not part of
// its identity: a sweep started by a wafsweep that did not record it
// resumes and records it; one that did keeps what it read.
func TestResumeRecordsTheAcceleratedEngineOfTheSameBuild(t *testing.T) {
	dir := t.TempDir()
	before := Options{Plan: plan.Default(), Target: deadTarget{}, SweepID: "s", OutDir: dir, Identity: "aaaa",
		Versions: dataset.Versions{Module: "sha256:1111", ModuleAccelerated: "sha256:3333", Envoy: "1.40.0"}}
	if _, err := startMetadata(before); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ reads, want string }{
		{"hyperscan (libhs.so.5)", "hyperscan (libhs.so.5)"},
		{"pure-go", "hyperscan (libhs.so.5)"}, // recorded once, by the first reader
	}
	for _, tt := range tests {
		now := before
		now.Versions.ModuleAcceleratedEngine = tt.reads
		got, err := startMetadata(now)
		if err != nil {
			t.Fatalf("resuming with the engine read as %q: %v", tt.reads, err)
		}
		onDisk, err := dataset.ReadMetadata(dir + "/" + MetadataFile)
		if err != nil {
			t.Fatal(err)
		}
		if got.Versions.ModuleAcceleratedEngine != tt.want || onDisk.Versions.ModuleAcceleratedEngine != tt.want {
			t.Errorf("read as %q: engine %q (on disk %q), want %q", tt.reads, got.Versions.ModuleAcceleratedEngine,
				onDisk.Versions.ModuleAcceleratedEngine, tt.want)
		}
	}
}
