package dataset

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/knee"
)

func openJournal(t *testing.T, path string) *Journal {
	t.Helper()
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func TestJournalRefusesDuplicatesAndGaps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steps.csv")
	j := openJournal(t, path)
	if err := j.Append(fullRow(0, "a", 0)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		row  StepRow
		want string
	}{
		{"same step again", fullRow(0, "a", 0), "step already recorded (round 0, config a, seq 0)"},
		{"gap in seq", fullRow(0, "a", 2), "out of order: the next seq of this search is 1"},
		{"new search not from 0", fullRow(1, "a", 1), "the next seq of this search is 0"},
	}
	for _, tt := range tests {
		if err := j.Append(tt.row); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
	j.Close()
	// The refusal holds across a restart too.
	j2 := openJournal(t, path)
	if err := j2.Append(fullRow(0, "a", 0)); err == nil {
		t.Error("reopened journal accepted a recorded step")
	}
	if err := j2.Append(fullRow(0, "a", 1)); err != nil {
		t.Errorf("next step refused: %v", err)
	}
	if n := len(j2.Rows()); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}
}

func TestJournalStepsPerSearch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "steps.csv")
	j := openJournal(t, path)
	for _, r := range []StepRow{fullRow(0, "a", 0), fullRow(0, "b", 0), fullRow(0, "a", 1), fullRow(1, "a", 0)} {
		if err := j.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	j = openJournal(t, path)
	got := j.Steps(0, "a")
	if len(got) != 2 || got[0].Seq != 0 || got[1].Seq != 1 || got[0].ConfigID != "a" {
		t.Errorf("Steps(0, a) = %+v", got)
	}
	if n := len(j.Steps(1, "a")); n != 1 {
		t.Errorf("Steps(1, a) has %d rows", n)
	}
	if n := len(j.Steps(2, "a")); n != 0 {
		t.Errorf("Steps(2, a) has %d rows", n)
	}
}

// A sweep killed mid-search resumes with the same next step it would have
// taken without the interruption.
func TestJournalResumesAKneeSearch(t *testing.T) {
	ladder := []int{1000, 2000, 3000, 4000}
	capacity := 2600
	path := filepath.Join(t.TempDir(), "steps.csv")

	j := openJournal(t, path)
	live, _ := knee.NewSearch(ladder, knee.DefaultOptions())
	for seq := range 5 {
		rate, kind, _ := live.Next()
		st := simulate(rate, capacity)
		if err := live.Record(st); err != nil {
			t.Fatal(err)
		}
		if err := j.Append(rowFromStep(0, "waf/full-crs/get", seq, kind, st)); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()

	resumed, err := knee.Replay(ladder, knee.DefaultOptions(), openJournal(t, path).KneeSteps(0, "waf/full-crs/get"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(resumed.Result(), live.Result()) {
		t.Errorf("resumed %+v\nlive    %+v", resumed.Result(), live.Result())
	}
	r1, k1, _ := resumed.Next()
	r2, k2, _ := live.Next()
	if r1 != r2 || k1 != k2 {
		t.Errorf("resumed asks %d %s, live %d %s", r1, k1, r2, k2)
	}
}

func simulate(rate, capacity int) knee.Step {
	st := knee.Step{Target: rate, Scheduled: 1000, Completed: 1000}
	if rate > capacity {
		st.Completed = 800
	}
	return st
}

func rowFromStep(round int, configID string, seq int, kind knee.Kind, st knee.Step) StepRow {
	return StepRow{
		SweepID: "sw", Round: round, ConfigID: configID, Seq: seq, Kind: string(kind),
		TargetRPS: st.Target, Scheduled: st.Scheduled, Completed: st.Completed, Non2xx: st.Errors,
		Verdict: VerdictOf(st), Reasons: st.InvalidReasons,
	}
}
