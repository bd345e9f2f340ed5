package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/procstat"
	"github.com/wafsweep/wafsweep/orchestrator/target"
)

// startMetadata writes metadata.json for a new sweep, or loads it when
// resuming (keeping the original start time, adding a note).
func startMetadata(opts Options) (dataset.Metadata, error) {
	path := filepath.Join(opts.OutDir, MetadataFile)
	desc := opts.Target.Describe()
	model, cores := machineOf(desc)
	if old, err := dataset.ReadMetadata(path); err == nil {
		if old.SchemaVersion != dataset.SchemaVersion {
			return old, fmt.Errorf("%s holds a sweep of dataset schema %d, this wafsweep writes schema %d: it cannot be resumed; use another --sweep-id or --results directory",
				opts.OutDir, max(old.SchemaVersion, 1), dataset.SchemaVersion)
		}
		if err := checkSetup(old, opts, model, cores); err != nil {
			return old, err
		}
		if old.Identity == "" {
			old.Identity = opts.Identity // a sweep that predates identities: recorded from now on
		}
		if old.Versions.ModuleAcceleratedEngine == "" {
			// The same build (checkSetup compared the digests), read by a
			// wafsweep that records its engine.
			old.Versions.ModuleAcceleratedEngine = opts.Versions.ModuleAcceleratedEngine
		}
		old.Notes = append(old.Notes, "resumed at "+time.Now().UTC().Format(time.RFC3339)+" by: "+strings.Join(opts.CommandLine, " "))
		old.FinishedAt = time.Time{}
		return old, dataset.WriteMetadata(path, old)
	} else if !errors.Is(err, os.ErrNotExist) {
		return dataset.Metadata{}, err
	}
	m := dataset.Metadata{
		SchemaVersion: dataset.SchemaVersion, SweepID: opts.SweepID, StartedAt: time.Now().UTC(), CommandLine: opts.CommandLine,
		Plan: opts.Plan, Versions: opts.Versions, CPUModel: model, Cores: cores,
		CoreAssignment: desc.CoreAssignment, Target: opts.Target.Name(), Identity: opts.Identity,
		Notes: slices.Concat(desc.Notes, transportNotes(opts.Plan.Transport())),
	}
	return m, dataset.WriteMetadata(path, m)
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
