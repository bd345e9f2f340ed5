package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
		old.Notes = append(old.Notes, "resumed at "+time.Now().UTC().Format(time.RFC3339)+" by: "+joinArgs(opts.CommandLine))
		old.FinishedAt = time.Time{}
		return old, dataset.WriteMetadata(path, old)
	} else if !errors.Is(err, os.ErrNotExist) {
		return dataset.Metadata{}, err
	}
	m := dataset.Metadata{
		SchemaVersion: dataset.SchemaVersion, SweepID: opts.SweepID, StartedAt: time.Now().UTC(), CommandLine: opts.CommandLine,
		Plan: opts.Plan, Versions: opts.Versions, CPUModel: procstat.CPUModel(), Cores: runtime.NumCPU(),
		CoreAssignment: desc.CoreAssignment, Target: opts.Target.Name(), Notes: desc.Notes,
	}
	return m, dataset.WriteMetadata(path, m)
}

func joinArgs(args []string) string {
	s := ""
	for i, a := range args {
		if i > 0 {
			s += " "
		}
		s += a
	}
	return s
}
