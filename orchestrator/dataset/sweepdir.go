package dataset

import "path/filepath"

// The files of a sweep's directory.
const (
	StepsFile    = "steps.csv"
	KneesFile    = "knees.csv"
	SLOKneesFile = "slo_knees.csv"
	MetadataFile = "metadata.json"
)

// Sweep is what a sweep's directory holds, read back.
type Sweep struct {
	Meta  Metadata
	Steps []StepRow
	Derived
	// Members are the mixed shapes' steps' members (members.csv, when
	// the sweep has a mix).
	Members []MemberRow
}

// ReadSweep reads the metadata and the CSV files of a sweep's directory.
func ReadSweep(dir string) (Sweep, error) {
	var s Sweep
	var err error
	if s.Meta, err = ReadMetadata(filepath.Join(dir, MetadataFile)); err != nil {
		return s, err
	}
	if s.Steps, err = ReadSteps(filepath.Join(dir, StepsFile)); err != nil {
		return s, err
	}
	if s.Knees, err = ReadKnees(filepath.Join(dir, KneesFile)); err != nil {
		return s, err
	}
	if s.SLOKnees, err = ReadSLOKnees(filepath.Join(dir, SLOKneesFile)); err != nil {
		return s, err
	}
	s.Members, err = ReadMembers(filepath.Join(dir, MembersFile))
	return s, err
}
