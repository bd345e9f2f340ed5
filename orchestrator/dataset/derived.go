package dataset

import (
	"fmt"
	"path/filepath"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// WriteDerived derives knees.csv and slo_knees.csv from steps, replaying
// every search with the sweep's plan p, and replaces them in dir. It
// returns the knees.
func WriteDerived(dir string, steps []StepRow, p plan.Plan) ([]KneeRow, error) {
	knees, err := BuildKnees(steps, p.Ladder, p.KneeOptions())
	if err != nil {
		return nil, fmt.Errorf("building knees: %w", err)
	}
	if err := WriteKnees(filepath.Join(dir, KneesFile), knees); err != nil {
		return nil, err
	}
	slo, err := BuildSLOKnees(steps, p.Ladder, p.KneeOptions(), ObjectivesOf(p))
	if err != nil {
		return nil, fmt.Errorf("building SLO knees: %w", err)
	}
	return knees, WriteSLOKnees(filepath.Join(dir, SLOKneesFile), slo)
}

// Rederive rewrites the derived files of the sweep in dir from its
// steps.csv and metadata.json: after a change to how they are derived
// (a new status, a new column), so that they say what this version
// decides from the same runs.
func Rederive(dir string) error {
	meta, err := ReadMetadata(filepath.Join(dir, MetadataFile))
	if err != nil {
		return err
	}
	steps, err := ReadSteps(filepath.Join(dir, StepsFile))
	if err != nil {
		return err
	}
	if _, err := WriteDerived(dir, steps, meta.Plan); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return nil
}
