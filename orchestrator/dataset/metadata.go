package dataset

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/cpuprobe"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// Targets: where the sweep ran.
const (
	TargetLocal = "local" // processes on this machine
	TargetKind  = "kind"  // a local kind cluster
	TargetKube  = "kube"  // a real Kubernetes cluster
)

// Versions of everything that shapes the numbers.
type Versions struct {
	Envoy  string `json:"envoy"`
	Module string `json:"module"` // the WAF filter module build
	// ModuleAccelerated is the accelerated build, when a flavor loads it.
	ModuleAccelerated string `json:"module_accelerated,omitempty"`
	// ModuleAcceleratedEngine is the engine that build links, read from
	// its file ("hyperscan (libhs.so.5)" or "pure-go"; package
	// filter/accel/linkage): which one a build has depends on the machine
	// that built it, not on the commit. Sweeps before 2026-12-06 lack it.
	ModuleAcceleratedEngine string `json:"module_accelerated_engine,omitempty"`
	// ModuleNoop is the no-op module, when envoy-noop-module is planned.
	ModuleNoop     string `json:"module_noop,omitempty"`
	Coraza         string `json:"coraza"`
	CRS            string `json:"crs"`
	Go             string `json:"go"`
	WafsweepCommit string `json:"wafsweep_commit"`
}

// Build is what of the versions identifies the measured builds: not
// wafsweep's own commit, which changes with every documentation edit.
// Nor the accelerated build's engine: its digest already identifies the
// build, and a sweep started before the engine was recorded resumes.
func (v Versions) Build() Versions {
	v.WafsweepCommit = ""
	v.ModuleAcceleratedEngine = ""
	return v
}

// SchemaVersion names the layout of a sweep's datasets (the columns of
// steps.csv, knees.csv and slo_knees.csv, and what they count). 2: counts
// inside the measured window, latency corrected for coordinated omission,
// SLO and baseline steps. Datasets without it are version 1, counted over
// whole Fortio runs, which this reader cannot read.
const SchemaVersion = 2

// Metadata is metadata.json: what is needed to reproduce a sweep.
type Metadata struct {
	SchemaVersion int       `json:"schema_version"`
	SweepID       string    `json:"sweep_id"`
	StartedAt     time.Time `json:"started_at"`
	FinishedAt    time.Time `json:"finished_at,omitzero"` // zero while running
	CommandLine   []string  `json:"command_line"`
	Plan          plan.Plan `json:"plan"`
	Versions      Versions  `json:"versions"`
	CPUModel      string    `json:"cpu_model"`
	Cores         int       `json:"cores"`
	// CoreAssignment maps a role (proxy, loadgen, backend) to its CPU list,
	// e.g. "2-3".
	CoreAssignment map[string]string `json:"core_assignment"`
	Target         string            `json:"target"` // TargetLocal, TargetKind, TargetKube
	// Identity digests the plan, the target with its CPU assignment or
	// cluster, and the builds' digests: a resume on anything else is
	// refused. Empty in sweeps that predate it.
	Identity string `json:"identity,omitempty"`
	// CPUProbes measured the proxy's CPU where the sweep started and at
	// each resume, on targets whose proxy runs on the sweep's machine
	// (recorded since 2026-12-06).
	CPUProbes []cpuprobe.Probe `json:"cpu_probes,omitempty"`
	Notes     []string         `json:"notes"`
}

// WriteMetadata replaces path with m as indented JSON, atomically.
func WriteMetadata(path string, m Metadata) error {
	return writeFileAtomic(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	})
}

// ReadMetadata reads metadata.json.
func ReadMetadata(path string) (Metadata, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Metadata{}, fmt.Errorf("read metadata: %w", err)
	}
	var m Metadata
	if err := json.Unmarshal(data, &m); err != nil {
		return Metadata{}, fmt.Errorf("parse metadata %s: %w", path, err)
	}
	return m, nil
}
