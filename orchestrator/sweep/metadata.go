package sweep

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/cpuprobe"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/procstat"
	"github.com/wafsweep/wafsweep/orchestrator/target"
)

// startMetadata writes metadata.json for a new sweep, or loads it when
// resuming (keeping the original start time, adding a note). Either way it
// first probes the proxy's CPU where the target runs the proxy here.
func startMetadata(ctx context.Context, opts Options) (dataset.Metadata, error) {
	path := filepath.Join(opts.OutDir, MetadataFile)
	desc := opts.Target.Describe()
	model, cores := machineOf(desc)
	old, err := dataset.ReadMetadata(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return dataset.Metadata{}, err
	}
	resuming := err == nil
	if resuming {
		if err := checkResumable(old, opts, model, cores); err != nil {
			return old, err
		}
	}
	probe, err := probeProxyCPU(ctx, opts)
	if err != nil {
		return old, err
	}
	if resuming {
		return resumeMetadata(path, old, opts, probe)
	}
	m := dataset.Metadata{
		SchemaVersion: dataset.SchemaVersion, SweepID: opts.SweepID, StartedAt: time.Now().UTC(), CommandLine: opts.CommandLine,
		Plan: opts.Plan, Versions: opts.Versions, CPUModel: model, Cores: cores,
		CoreAssignment: desc.CoreAssignment, Target: opts.Target.Name(), Identity: opts.Identity,
		CPUProbes: probe, Notes: slices.Concat(desc.Notes, transportNotes(opts.Plan.Transport())),
	}
	return m, dataset.WriteMetadata(path, m)
}

// checkResumable refuses a resume of another schema or setup.
func checkResumable(old dataset.Metadata, opts Options, model string, cores int) error {
	if old.SchemaVersion != dataset.SchemaVersion {
		return fmt.Errorf("%s holds a sweep of dataset schema %d, this wafsweep writes schema %d: it cannot be resumed; use another --sweep-id or --results directory",
			opts.OutDir, max(old.SchemaVersion, 1), dataset.SchemaVersion)
	}
	return checkSetup(old, opts, model, cores)
}

// resumeMetadata records a resume: the command, the probe, and how the
// proxy's CPU compares with where the sweep started.
func resumeMetadata(path string, old dataset.Metadata, opts Options, probe []cpuprobe.Probe) (dataset.Metadata, error) {
	if old.Identity == "" {
		old.Identity = opts.Identity // a sweep that predates identities: recorded from now on
	}
	if old.Versions.ModuleAcceleratedEngine == "" {
		// The same build (checkSetup compared the digests), read by a
		// wafsweep that records its engine.
		old.Versions.ModuleAcceleratedEngine = opts.Versions.ModuleAcceleratedEngine
	}
	note := "resumed at " + time.Now().UTC().Format(time.RFC3339) + " by: " + strings.Join(opts.CommandLine, " ")
	if len(old.CPUProbes) > 0 && len(probe) > 0 {
		if change := machineChange(old.CPUProbes[0], probe[0]); change != "" {
			note += "; " + change
			warn(opts, "%s: rounds measured from here on are not comparable with the earlier ones", change)
		}
	}
	old.CPUProbes = append(old.CPUProbes, probe...)
	old.Notes = append(old.Notes, note)
	old.FinishedAt = time.Time{}
	return old, dataset.WriteMetadata(path, old)
}

// Thresholds of the probes' warnings, provisional: set on one noisy
// virtual machine (2 s probes a minute apart at 4,100-6,800 units/s, their
// slices 18-71% apart, no CPU steal), not yet checked on a quiet one.
const (
	probeTolerance = 0.15 // a resume's probe against the start's
	noisySpread    = 0.25 // one probe's fastest and slowest slices
)

// probeProxyCPU measures the proxy's first CPU, before anything is
// deployed on it: one probe, or none where the target's proxy runs on
// another machine. It warns when the machine is noisy.
func probeProxyCPU(ctx context.Context, opts Options) ([]cpuprobe.Probe, error) {
	local, ok := opts.Target.(target.LocalProxy)
	if !ok {
		return nil, nil
	}
	p, err := cpuprobe.Measure(ctx, local.ProxyCPU(), cmp.Or(opts.CPUProbe, cpuprobe.DefaultDuration))
	if err != nil {
		return nil, fmt.Errorf("before the sweep: %w", err)
	}
	if noise := noiseWarning(p); noise != "" {
		warn(opts, "%s", noise)
	}
	return []cpuprobe.Probe{p}, nil
}

// noiseWarning says when a probe's slices were further apart than
// noisySpread; "" when not.
func noiseWarning(p cpuprobe.Probe) string {
	if p.Spread <= noisySpread {
		return ""
	}
	return fmt.Sprintf("the proxy's CPU ran the probe's work at rates %.0f%% apart from one 100 ms to another, with nothing of this sweep on it: "+
		"another tenant is loading the machine's shared caches or cores, so expect figures to vary from run to run", 100*p.Spread)
}

// warn writes a warning to the sweep's progress output (Run sets one).
func warn(opts Options, format string, args ...any) {
	fmt.Fprintf(opts.Progress, "wafsweep: warning: "+format+"\n", args...)
}

// machineChange says how far now's probe is from the start's, when it is
// beyond probeTolerance; "" when within.
func machineChange(start, now cpuprobe.Probe) string {
	slower := now.Slower(start)
	if math.Abs(slower) <= probeTolerance {
		return ""
	}
	word := "slower"
	if slower < 0 {
		word = "faster"
	}
	return fmt.Sprintf("the proxy's CPU probed %.0f%% %s than where the sweep started (%.0f units/s against %.0f)",
		100*math.Abs(slower), word, now.Rate, start.Rate)
}

// machineOf is the processor the figures are about: the one the target
// names (the proxy's machine), or this one's when it names none.
func machineOf(desc target.Description) (model string, cores int) {
	if desc.CPUModel != "" {
		return desc.CPUModel, desc.Cores
	}
	return procstat.CPUInfo()
}

// transportNotes say how the load reached the proxy when it was not
// HTTP/1.1 in clear through Fortio's own client.
func transportNotes(t plan.Transport) []string {
	var notes []string
	if t.HTTP2() {
		notes = append(notes, "HTTP/2: the load generator is Fortio's standard client (net/http with golang.org/x/net/http2), "+
			"one connection per Fortio connection and one request in flight on each, as with HTTP/1.1; it costs more CPU per request "+
			"than Fortio's own HTTP/1.1 client, so each step's loadgen_cpu_fraction and loadgen_lateness_p99_ms say whether it kept its schedule; "+
			"the proxy speaks HTTP/1.1 to the backend")
	}
	if t.TLS {
		notes = append(notes, "TLS: the proxy (the backend, for direct) terminates TLS 1.2 or 1.3 with an ECDSA P-256 certificate made for each run of the sweep "+
			"(its key is never stored) and the load generator verifies it; connections are kept alive, so handshakes are a few per step")
	}
	return notes
}

// checkSetup refuses to resume a sweep measured on another setup: another
// plan, build, CPU assignment, cluster or processor (a dataset resumed
// across sessions may meet an AMD EPYC VM one day and an Intel Xeon the
// next). One dataset would mix two of them. The error names what changed
// and the way out. The processor is compared even when the identity
// matches: a cluster's identity digests its flags, not its nodes.
func checkSetup(old dataset.Metadata, opts Options, model string, cores int) error {
	processorChanged := old.CPUModel != "" && (old.CPUModel != model || old.Cores != cores)
	identityChanged := old.Identity != "" && opts.Identity != "" && old.Identity != opts.Identity
	if !processorChanged && !identityChanged {
		return nil
	}
	var changed []string
	if processorChanged {
		changed = append(changed, fmt.Sprintf("the processor (%d x %s, now %d x %s)", old.Cores, old.CPUModel, cores, model))
	}
	if identityChanged {
		changed = append(changed, identityChanges(old, opts)...)
	}
	if len(changed) == 0 {
		changed = append(changed, "the target's cluster, image or CPU settings")
	}
	return fmt.Errorf("%s was measured on another setup (%s): resuming would mix two setups in one dataset; "+
		"give another --sweep-id (or none: the default id names this setup), or rerun with what measured it",
		opts.OutDir, strings.Join(changed, ", "))
}

// identityChanges names what differs, of what the identity digests and
// the metadata records, between two setups whose identities differ.
func identityChanges(old dataset.Metadata, opts Options) []string {
	var changed []string
	oldPlan, _ := json.Marshal(old.Plan)
	newPlan, _ := json.Marshal(opts.Plan)
	if !bytes.Equal(oldPlan, newPlan) {
		changed = append(changed, "the plan")
	}
	if old.Versions.Build() != opts.Versions.Build() {
		changed = append(changed, fmt.Sprintf("the builds (%+v, now %+v)", old.Versions.Build(), opts.Versions.Build()))
	}
	if cpus := opts.Target.Describe().CoreAssignment; !maps.Equal(old.CoreAssignment, cpus) {
		changed = append(changed, fmt.Sprintf("the CPU assignment (%v, now %v)", old.CoreAssignment, cpus))
	}
	if old.Target != opts.Target.Name() {
		changed = append(changed, fmt.Sprintf("the target (%s, now %s)", old.Target, opts.Target.Name()))
	}
	return changed
}
