package sweep

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/cpuprobe"
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
	if _, err := startMetadata(t.Context(), base); err != nil {
		t.Fatal(err)
	}
	if _, err := startMetadata(t.Context(), base); err != nil {
		t.Fatalf("the same setup must resume: %v", err)
	}
	recommitted := base
	recommitted.Versions.WafsweepCommit = "abc"
	if _, err := startMetadata(t.Context(), recommitted); err != nil {
		t.Fatalf("a wafsweep commit alone must resume: %v", err)
	}

	rebuilt := base
	rebuilt.Identity, rebuilt.Versions.Module = "bbbb", "sha256:2222"
	_, err := startMetadata(t.Context(), rebuilt)
	if err == nil || !strings.Contains(err.Error(), "the builds") || !strings.Contains(err.Error(), "--sweep-id") {
		t.Fatalf("a rebuilt module resumed the sweep: %v", err)
	}
	replanned := base
	replanned.Identity = "cccc"
	replanned.Plan.Rounds = 2
	if _, err := startMetadata(t.Context(), replanned); err == nil || !strings.Contains(err.Error(), "the plan") {
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
	if _, err := startMetadata(t.Context(), elsewhere); err == nil || !strings.Contains(err.Error(), "the processor (3 x no such processor, now ") {
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
	got, err := startMetadata(t.Context(), legacy)
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
	if _, err := startMetadata(t.Context(), before); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ reads, want string }{
		{"hyperscan (libhs.so.5)", "hyperscan (libhs.so.5)"},
		{"pure-go", "hyperscan (libhs.so.5)"}, // recorded once, by the first reader
	}
	for _, tt := range tests {
		now := before
		now.Versions.ModuleAcceleratedEngine = tt.reads
		got, err := startMetadata(t.Context(), now)
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

// localDeadTarget is a target whose proxy would run here, on CPU 0.
type localDeadTarget struct{ deadTarget }

func (localDeadTarget) ProxyCPU() int { return 0 }

// Where the proxy runs here, the sweep probes its CPU at the start and at
// each resume, and a resume on a machine that probes much slower says so
// in its note and on the progress output; a target whose proxy runs
// elsewhere is not probed.
func TestResumeProbesTheProxyCPU(t *testing.T) {
	dir := t.TempDir()
	var progress bytes.Buffer
	opts := Options{Plan: plan.Default(), Target: localDeadTarget{}, SweepID: "s", OutDir: dir, Identity: "aaaa",
		CPUProbe: 20 * time.Millisecond, Progress: &progress}
	started, err := startMetadata(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(started.CPUProbes) != 1 || started.CPUProbes[0].Rate <= 0 || started.CPUProbes[0].CPU != 0 {
		t.Fatalf("probes at the start: %+v", started.CPUProbes)
	}
	// The machine the sweep started on was, say, three times as fast.
	started.CPUProbes[0].Rate *= 3
	if err := dataset.WriteMetadata(filepath.Join(dir, MetadataFile), started); err != nil {
		t.Fatal(err)
	}
	resumed, err := startMetadata(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	note := resumed.Notes[len(resumed.Notes)-1]
	if len(resumed.CPUProbes) != 2 || !strings.Contains(note, "% slower than where the sweep started") ||
		!strings.Contains(progress.String(), "warning: the proxy's CPU probed") {
		t.Errorf("resumed on a slower machine: probes %+v, note %q, progress %q", resumed.CPUProbes, note, progress.String())
	}

	elsewhere := opts
	elsewhere.Target, elsewhere.OutDir = deadTarget{}, t.TempDir()
	if m, err := startMetadata(t.Context(), elsewhere); err != nil || len(m.CPUProbes) != 0 {
		t.Errorf("a target whose proxy runs elsewhere: probes %+v, %v", m.CPUProbes, err)
	}
}

func TestMachineChange(t *testing.T) {
	start := cpuprobe.Probe{Rate: 20000}
	tests := []struct {
		rate float64
		want string // "" for none
	}{
		{20000, ""},
		{17500, ""}, // 12.5% slower: within a noisy machine's own variation
		{16000, "the proxy's CPU probed 20% slower than where the sweep started (16000 units/s against 20000)"},
		{24000, "the proxy's CPU probed 20% faster than where the sweep started (24000 units/s against 20000)"},
	}
	for _, tc := range tests {
		if got := machineChange(start, cpuprobe.Probe{Rate: tc.rate}); got != tc.want {
			t.Errorf("probed %v: %q, want %q", tc.rate, got, tc.want)
		}
	}
}

func TestNoiseWarning(t *testing.T) {
	for _, tc := range []struct {
		spread float64
		warns  bool
	}{{0.05, false}, {0.25, false}, {0.4, true}} {
		got := noiseWarning(cpuprobe.Probe{Rate: 5000, Spread: tc.spread})
		if (got != "") != tc.warns || tc.warns && !strings.Contains(got, "rates 40% apart") {
			t.Errorf("spread %v: %q, want a warning: %v", tc.spread, got, tc.warns)
		}
	}
}
