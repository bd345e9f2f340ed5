package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// startMetadata writes metadata.json for a new sweep, or loads it when
// resuming (keeping the original start time, adding a note).
func startMetadata(opts Options) (dataset.Metadata, error) {
	path := filepath.Join(opts.OutDir, MetadataFile)
	desc := opts.Target.Describe()
	if old, err := dataset.ReadMetadata(path); err == nil {
		if old.SchemaVersion != dataset.SchemaVersion {
			return old, fmt.Errorf("%s holds a sweep of dataset schema %d, this wafsweep writes schema %d: it cannot be resumed; use another --sweep-id or --results directory",
				opts.OutDir, max(old.SchemaVersion, 1), dataset.SchemaVersion)
		}
		if err := checkIdentity(old, opts); err != nil {
			return old, err
		}
		if old.Identity == "" {
			old.Identity = opts.Identity // a sweep that predates identities: recorded from now on
		}
		old.Notes = append(old.Notes, "resumed at "+time.Now().UTC().Format(time.RFC3339)+" by: "+strings.Join(opts.CommandLine, " "))
		old.FinishedAt = time.Time{}
		return old, dataset.WriteMetadata(path, old)
	} else if !errors.Is(err, os.ErrNotExist) {
		return dataset.Metadata{}, err
	}
	m := dataset.Metadata{
		SchemaVersion: dataset.SchemaVersion, SweepID: opts.SweepID, StartedAt: time.Now().UTC(), CommandLine: opts.CommandLine,
		Plan: opts.Plan, Versions: opts.Versions, CPUModel: procstat.CPUModel(), Cores: runtime.NumCPU(),
		CoreAssignment: desc.CoreAssignment, Target: opts.Target.Name(), Identity: opts.Identity, Notes: desc.Notes,
	}
	if desc.CPUModel != "" {
		// The proxy runs elsewhere (a cluster node): its processor is the
		// one the figures are about, not this workstation's.
		m.CPUModel, m.Cores = desc.CPUModel, desc.Cores
	}
	return m, dataset.WriteMetadata(path, m)
}

// checkIdentity refuses to resume a sweep measured on another plan, build,
// CPU assignment or cluster: one dataset would mix two of them. The error
// names what changed and the way out.
func checkIdentity(old dataset.Metadata, opts Options) error {
	if old.Identity == "" || opts.Identity == "" || old.Identity == opts.Identity {
		return nil
	}
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
	if len(changed) == 0 {
		changed = append(changed, "the target's cluster, image or CPU settings")
	}
	return fmt.Errorf("%s was measured on another setup (%s): resuming would mix two setups in one dataset; "+
		"give another --sweep-id (or none: the default id names this setup), or rerun with what measured it",
		opts.OutDir, strings.Join(changed, ", "))
}
