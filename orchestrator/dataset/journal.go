package dataset

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/wafsweep/wafsweep/orchestrator/knee"
)

// Journal is steps.csv seen as the record of a sweep in progress: it tells
// which steps of which search are already measured, so that a resumed sweep
// replays them (knee.Replay) instead of measuring them again, and it refuses
// to record a step twice.
type Journal struct {
	mu sync.Mutex
	w  *StepWriter
	// members appends to members.csv beside steps.csv, opened with the
	// first mixed step.
	members     *appender[MemberRow]
	membersPath string
	rows        []StepRow
	byKey       map[stepKey]bool
	counts      map[searchKey]int
}

// searchKey identifies one knee search: a config in a round.
type searchKey struct {
	round    int
	configID string
}

// OpenJournal opens (or creates) steps.csv, repairing a torn last line, and
// loads the steps already recorded.
func OpenJournal(path string) (*Journal, error) {
	w, err := OpenStepWriter(path)
	if err != nil {
		return nil, err
	}
	rows, err := ReadSteps(path)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open journal: %w", err)
	}
	j := &Journal{w: w, membersPath: filepath.Join(filepath.Dir(path), MembersFile), byKey: map[stepKey]bool{}, counts: map[searchKey]int{}}
	for _, r := range rows {
		j.remember(r)
	}
	return j, nil
}

func (j *Journal) remember(r StepRow) {
	j.rows = append(j.rows, r)
	j.byKey[r.key()] = true
	j.counts[searchKey{r.Round, r.ConfigID}]++
}

// Append records a measured step, and the members of a mixed shape's step
// first (see ReadMembers). Within a search, steps must come in seq order
// from 0 without gaps, and a (round, config, seq) is written once.
func (j *Journal) Append(row StepRow, members ...MemberRow) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.byKey[row.key()] {
		return fmt.Errorf("journal: step already recorded (%s)", row.key())
	}
	if next := j.counts[searchKey{row.Round, row.ConfigID}]; row.Seq != next {
		return fmt.Errorf("journal: step (%s) out of order: the next seq of this search is %d", row.key(), next)
	}
	if err := j.appendMembers(row, members); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := j.w.Write(row); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.remember(row)
	return nil
}

func (j *Journal) appendMembers(row StepRow, members []MemberRow) error {
	for _, m := range members {
		if !m.Of(row) {
			return fmt.Errorf("member %s of step (round %d, config %s, seq %d) given with step (%s)", m.Member, m.Round, m.ConfigID, m.Seq, row.key())
		}
	}
	if len(members) == 0 {
		return nil
	}
	if j.members == nil {
		a, err := openAppender(j.membersPath, memberSchema)
		if err != nil {
			return fmt.Errorf("open members %s: %w", j.membersPath, err)
		}
		j.members = a
	}
	for i := range members {
		if err := j.members.write(&members[i]); err != nil {
			return fmt.Errorf("append member %s of step (%s) to %s: %w", members[i].Member, row.key(), j.membersPath, err)
		}
	}
	return nil
}

// Steps returns the recorded steps of one search in seq order.
func (j *Journal) Steps(round int, configID string) []StepRow {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []StepRow
	for _, r := range j.rows {
		if r.Round == round && r.ConfigID == configID {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b StepRow) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// KneeSteps is Steps as knee steps, ready for knee.Replay.
func (j *Journal) KneeSteps(round int, configID string) []knee.Step {
	return kneeSteps(CapacitySteps(j.Steps(round, configID)))
}

// Rows returns every recorded step in file order.
func (j *Journal) Rows() []StepRow {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.rows)
}

// Close closes the underlying files.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	err := j.w.Close()
	if j.members != nil {
		err = errors.Join(err, j.members.close())
	}
	return err
}
