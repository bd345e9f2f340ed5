package dataset

import (
	"fmt"
	"path/filepath"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// Derived is what a sweep's steps decide: knees.csv and slo_knees.csv.
type Derived struct {
	Knees    []KneeRow
	SLOKnees []SLOKneeRow
}

// Derive replays every search of steps with the sweep's plan p.
func Derive(steps []StepRow, p plan.Plan) (Derived, error) {
	knees, err := BuildKnees(steps, p.Ladder, p.KneeOptions())
	if err != nil {
		return Derived{}, fmt.Errorf("building knees: %w", err)
	}
	slo, err := BuildSLOKnees(steps, p.Ladder, p.KneeOptions(), ObjectivesOf(p))
	if err != nil {
		return Derived{}, fmt.Errorf("building SLO knees: %w", err)
	}
	return Derived{Knees: knees, SLOKnees: slo}, nil
}

// Write replaces knees.csv and slo_knees.csv in dir.
func (d Derived) Write(dir string) error {
	if err := WriteKnees(filepath.Join(dir, KneesFile), d.Knees); err != nil {
		return err
	}
	return WriteSLOKnees(filepath.Join(dir, SLOKneesFile), d.SLOKnees)
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
	d, err := Derive(steps, meta.Plan)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return d.Write(dir)
}
