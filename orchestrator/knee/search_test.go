package knee

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// outcome of a scripted step.
type outcome int

const (
	pass outcome = iota
	fail
	invalid
)

// move is one expected request of the search and the outcome fed back.
type move struct {
	rate int
	kind Kind
	out  outcome
}

func makeStep(rate int, out outcome, reason string) Step {
	st := Step{Target: rate, Scheduled: 1000, Completed: 1000}
	switch out {
	case fail:
		st.Completed = 900
	case invalid:
		st.Invalid, st.InvalidReasons = true, []string{reason}
	}
	return st
}

// play checks that the search asks for exactly the scripted moves and then
// reports done.
func play(t *testing.T, s *Search, script []move) []Step {
	t.Helper()
	var steps []Step
	for i, m := range script {
		rate, kind, done := s.Next()
		if done || rate != m.rate || kind != m.kind {
			t.Fatalf("move %d: Next() = %d %s done=%v, want %d %s", i, rate, kind, done, m.rate, m.kind)
		}
		st := makeStep(rate, m.out, "reason "+string(rune('a'+i)))
		if err := s.Record(st); err != nil {
			t.Fatalf("move %d: %v", i, err)
		}
		steps = append(steps, st)
	}
	if rate, kind, done := s.Next(); !done {
		t.Fatalf("search goes on after the script: Next() = %d %s", rate, kind)
	}
	return steps
}

var ladder = []int{1000, 2000, 3000, 4000, 6000, 8000, 10000}

func TestSearchScripts(t *testing.T) {
	tests := []struct {
		name   string
		ladder []int
		opts   Options
		script []move
		want   Result // Steps is filled in from the script
	}{
		{
			name:   "passing the top is censored above",
			ladder: []int{1000, 2000, 3000},
			opts:   DefaultOptions(),
			script: []move{{1000, KindLadder, pass}, {2000, KindLadder, pass}, {3000, KindLadder, pass}},
			want:   Result{Done: true, Knee: 3000, CensoredAbove: true, Bound: 3000},
		},
		{
			name:   "failing the bottom is censored below",
			ladder: ladder,
			opts:   DefaultOptions(),
			script: []move{{1000, KindLadder, fail}},
			want:   Result{Done: true, CensoredBelow: true, Bound: 1000, LowestFail: 1000},
		},
		{
			name:   "bisect to the gap then confirm",
			ladder: ladder,
			opts:   DefaultOptions(),
			script: []move{
				{1000, KindLadder, pass}, {2000, KindLadder, pass}, {3000, KindLadder, pass}, {4000, KindLadder, fail},
				{3500, KindBisect, pass},  // gap 1000 > 250
				{3750, KindBisect, fail},  // gap 500 > 250
				{3500, KindConfirm, pass}, // gap 250 <= 250
			},
			want: Result{Done: true, Knee: 3500, LowestFail: 3750, Confirmed: true},
		},
		{
			name:   "five percent of the pass widens the gap rule",
			ladder: ladder,
			opts:   DefaultOptions(),
			script: []move{
				{1000, KindLadder, pass}, {2000, KindLadder, pass}, {3000, KindLadder, pass}, {4000, KindLadder, pass},
				{6000, KindLadder, pass}, {8000, KindLadder, fail},
				{7000, KindBisect, pass},  // gap 2000
				{7500, KindBisect, fail},  // gap 1000
				{7250, KindBisect, fail},  // gap 500 > 350 (5% of 7000)
				{7000, KindConfirm, pass}, // gap 250 <= 350
			},
			want: Result{Done: true, Knee: 7000, LowestFail: 7250, Confirmed: true},
		},
		{
			name:   "failed confirmation bisects below it",
			ladder: []int{1000, 2000, 3000, 4000},
			opts:   DefaultOptions(),
			script: []move{
				{1000, KindLadder, pass}, {2000, KindLadder, pass}, {3000, KindLadder, pass}, {4000, KindLadder, fail},
				{3500, KindBisect, pass}, {3750, KindBisect, fail},
				{3500, KindConfirm, fail}, // now 3000 passes, 3500 fails: gap 500
				{3250, KindBisect, pass},
				{3250, KindConfirm, pass},
			},
			want: Result{Done: true, Knee: 3250, LowestFail: 3500, Confirmed: true},
		},
		{
			name:   "failed confirmation at the bottom is censored below",
			ladder: []int{1000, 1200},
			opts:   DefaultOptions(),
			script: []move{{1000, KindLadder, pass}, {1200, KindLadder, fail}, {1000, KindConfirm, fail}},
			want:   Result{Done: true, CensoredBelow: true, Bound: 1000, LowestFail: 1000},
		},
		{
			name:   "failed confirmation falls back on the rung below",
			ladder: []int{1000, 2000, 2200},
			opts:   DefaultOptions(),
			script: []move{
				{1000, KindLadder, pass}, {2000, KindLadder, pass}, {2200, KindLadder, fail},
				{2000, KindConfirm, fail},
				{1500, KindBisect, fail}, {1250, KindBisect, pass}, {1250, KindConfirm, pass},
			},
			want: Result{Done: true, Knee: 1250, LowestFail: 1500, Confirmed: true},
		},
		{
			name:   "without confirm the search stops at the gap",
			ladder: ladder,
			opts:   Options{},
			script: []move{
				{1000, KindLadder, pass}, {2000, KindLadder, pass}, {3000, KindLadder, pass}, {4000, KindLadder, fail},
				{3500, KindBisect, pass}, {3750, KindBisect, fail},
			},
			want: Result{Done: true, Knee: 3500, LowestFail: 3750},
		},
		{
			name:   "a larger MinGap stops earlier",
			ladder: []int{1000, 2000, 3000},
			opts:   Options{Confirm: true, MinGap: 1000},
			script: []move{{1000, KindLadder, pass}, {2000, KindLadder, pass}, {3000, KindLadder, fail}, {2000, KindConfirm, pass}},
			want:   Result{Done: true, Knee: 2000, LowestFail: 3000, Confirmed: true},
		},
		{
			name:   "bisection rounds to a unit no larger than half the tolerance",
			ladder: []int{1000, 1100},
			opts:   Options{Confirm: true, MinGap: 60, GapFraction: 1e-9},
			script: []move{
				{1000, KindLadder, pass}, {1100, KindLadder, fail},
				{1050, KindBisect, pass}, // unit 10 (half of 60 is 30); then the gap 50 <= 60
				{1050, KindConfirm, pass},
			},
			want: Result{Done: true, Knee: 1050, LowestFail: 1100, Confirmed: true},
		},
		{
			name:   "invalid step is retried at the same rate",
			ladder: []int{1000, 2000, 3000},
			opts:   DefaultOptions(),
			script: []move{
				{1000, KindLadder, pass}, {2000, KindLadder, invalid}, {2000, KindRetry, pass}, {3000, KindLadder, pass},
			},
			want: Result{Done: true, Knee: 3000, CensoredAbove: true, Bound: 3000},
		},
		{
			name:   "retry keeps the purpose: a retried confirm confirms",
			ladder: []int{1000, 2000},
			opts:   DefaultOptions(),
			script: []move{
				{1000, KindLadder, pass}, {2000, KindLadder, fail},
				{1500, KindBisect, pass}, {1750, KindBisect, fail},
				{1500, KindConfirm, invalid}, {1500, KindRetry, pass},
			},
			want: Result{Done: true, Knee: 1500, LowestFail: 1750, Confirmed: true},
		},
		{
			name:   "still invalid after the retries ends the search, the last pass a lower bound",
			ladder: ladder,
			opts:   DefaultOptions(),
			script: []move{{1000, KindLadder, pass}, {2000, KindLadder, invalid}, {2000, KindRetry, invalid}},
			want:   Result{Done: true, Invalid: true, Bound: 1000, Reasons: []string{"reason b", "reason c"}},
		},
		{
			name:   "more retries when asked",
			ladder: ladder,
			opts:   Options{MaxInvalidRetries: 2},
			script: []move{{1000, KindLadder, invalid}, {1000, KindRetry, invalid}, {1000, KindRetry, invalid}},
			want:   Result{Done: true, Invalid: true, Reasons: []string{"reason a", "reason b", "reason c"}},
		},
		{
			name:   "negative retries never retry",
			ladder: ladder,
			opts:   Options{MaxInvalidRetries: -1},
			script: []move{{1000, KindLadder, invalid}},
			want:   Result{Done: true, Invalid: true, Reasons: []string{"reason a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSearch(tt.ladder, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Steps = play(t, s, tt.script)
			if got := s.Result(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Result() = %+v\nwant       %+v", got, tt.want)
			}
		})
	}
}

// runAgainst drives a search against a proxy that sustains exactly capacity
// RPS, checking the invariants of every request on the way.
func runAgainst(t *testing.T, capacity int, opts Options) Result {
	t.Helper()
	r, _ := traceAgainst(t, capacity, opts)
	return r
}

// traceAgainst is runAgainst that also returns the requests of the search.
func traceAgainst(t *testing.T, capacity int, opts Options) (Result, []move) {
	t.Helper()
	s, err := NewSearch(ladder, opts)
	if err != nil {
		t.Fatal(err)
	}
	var trace []move
	for n := 0; ; n++ {
		rate, kind, done := s.Next()
		if done {
			break
		}
		if n > 40 {
			t.Fatalf("capacity %d: no end after %d steps", capacity, n)
		}
		switch kind {
		case KindBisect:
			unit := 5 // the smallest round unit a tolerance of 10 RPS or more allows
			if rate%unit != 0 || rate <= s.highestPass || rate >= s.lowestFail {
				t.Fatalf("capacity %d: bisect at %d outside (%d, %d) or not a multiple of %d", capacity, rate, s.highestPass, s.lowestFail, unit)
			}
		case KindDescend:
			if rate < opts.Floor || rate >= ladder[0] || (rate%10 != 0 && rate != opts.Floor) {
				t.Fatalf("capacity %d: descend at %d outside [%d, %d) or not a multiple of 10", capacity, rate, opts.Floor, ladder[0])
			}
		}
		out := fail
		if rate <= capacity {
			out = pass
		}
		if err := s.Record(makeStep(rate, out, "")); err != nil {
			t.Fatal(err)
		}
		trace = append(trace, move{rate, kind, out})
	}
	return s.Result(), trace
}

func TestSearchConvergesForEveryCapacity(t *testing.T) {
	for capacity := 100; capacity <= 12000; capacity += 50 {
		r := runAgainst(t, capacity, DefaultOptions())
		switch {
		case capacity < ladder[0]:
			if !r.CensoredBelow || r.Knee != 0 {
				t.Errorf("capacity %d: %+v, want censored below", capacity, r)
			}
		case capacity >= ladder[len(ladder)-1]:
			if !r.CensoredAbove || r.Knee != ladder[len(ladder)-1] {
				t.Errorf("capacity %d: %+v, want censored above", capacity, r)
			}
		default:
			tolerance := math.Max(250, 0.05*float64(r.Knee))
			if r.Knee > capacity || r.LowestFail <= capacity || float64(r.LowestFail-r.Knee) > tolerance || !r.Confirmed {
				t.Errorf("capacity %d: knee %d, lowest fail %d, confirmed %v", capacity, r.Knee, r.LowestFail, r.Confirmed)
			}
		}
	}
}

func TestRecordRejectsUnexpectedSteps(t *testing.T) {
	s, err := NewSearch([]int{1000, 2000}, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	err = s.Record(makeStep(2000, pass, ""))
	if err == nil || !strings.Contains(err.Error(), "step at 2000 RPS recorded, but the search asked for 1000 RPS (ladder)") {
		t.Fatalf("err = %v", err)
	}
	if rate, _, _ := s.Next(); rate != 1000 || len(s.Result().Steps) != 0 {
		t.Errorf("a rejected step changed the search: next %d, %d steps", rate, len(s.Result().Steps))
	}
	if err := s.Record(makeStep(1000, fail, "")); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(makeStep(1000, fail, "")); err == nil || !strings.Contains(err.Error(), "after the search ended") {
		t.Fatalf("step after the end: err = %v", err)
	}
}

func TestNewSearchRejectsBadInput(t *testing.T) {
	tests := []struct {
		name   string
		ladder []int
		opts   Options
	}{
		{"empty ladder", nil, Options{}},
		{"descending ladder", []int{2000, 1000}, Options{}},
		{"repeated rate", []int{1000, 1000}, Options{}},
		{"zero rate", []int{0, 1000}, Options{}},
		{"negative gap", []int{1000}, Options{MinGap: -1}},
		{"fraction of one", []int{1000}, Options{GapFraction: 1}},
		{"negative floor", []int{1000}, Options{Floor: -1}},
		{"floor at the bottom of the ladder", []int{1000, 2000}, Options{Floor: 1000}},
		{"floor above the bottom of the ladder", []int{1000, 2000}, Options{Floor: 1500}},
	}
	for _, tt := range tests {
		if _, err := NewSearch(tt.ladder, tt.opts); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
}

// A search replayed from any prefix of its steps is in the same state as
// the original was after those steps.
func TestReplayEquivalence(t *testing.T) {
	script := []move{
		{1000, KindLadder, pass}, {2000, KindLadder, invalid}, {2000, KindRetry, pass},
		{3000, KindLadder, pass}, {4000, KindLadder, fail},
		{3500, KindBisect, pass}, {3750, KindBisect, fail},
		{3500, KindConfirm, fail}, {3250, KindBisect, pass}, {3250, KindConfirm, pass},
	}
	if r := checkReplayEquivalence(t, ladder, DefaultOptions(), script); r.Knee != 3250 || !r.Done {
		t.Fatalf("script did not finish as expected: %+v", r)
	}
}

// checkReplayEquivalence feeds the script to a search step by step and, at
// every prefix, compares it with a search replayed from that prefix. It
// returns the final result.
func checkReplayEquivalence(t *testing.T, ladder []int, opts Options, script []move) Result {
	t.Helper()
	orig, err := NewSearch(ladder, opts)
	if err != nil {
		t.Fatal(err)
	}
	var steps []Step
	for i := 0; i <= len(script); i++ {
		replayed, err := Replay(ladder, opts, steps)
		if err != nil {
			t.Fatalf("prefix %d: %v", i, err)
		}
		if !reflect.DeepEqual(replayed.Result(), orig.Result()) {
			t.Fatalf("prefix %d: result %+v, original %+v", i, replayed.Result(), orig.Result())
		}
		r1, k1, d1 := replayed.Next()
		r2, k2, d2 := orig.Next()
		if r1 != r2 || k1 != k2 || d1 != d2 {
			t.Fatalf("prefix %d: replayed asks %d %s %v, original %d %s %v", i, r1, k1, d1, r2, k2, d2)
		}
		if i == len(script) {
			break
		}
		if r2 != script[i].rate || k2 != script[i].kind {
			t.Fatalf("move %d: search asks %d %s, script has %d %s", i, r2, k2, script[i].rate, script[i].kind)
		}
		st := makeStep(script[i].rate, script[i].out, "r")
		if err := orig.Record(st); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, st)
	}
	return orig.Result()
}

func TestReplayRejectsForeignSteps(t *testing.T) {
	tests := []struct {
		name  string
		steps []Step
		want  string
	}{
		{"wrong rate", []Step{makeStep(1000, pass, ""), makeStep(3000, pass, "")},
			"replay step 1: knee search: step at 3000 RPS recorded, but the search asked for 2000 RPS"},
		{"steps after the end", []Step{makeStep(1000, fail, ""), makeStep(2000, pass, "")},
			"replay step 1: knee search: step at 2000 RPS recorded after the search ended"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Replay(ladder, DefaultOptions(), tt.steps)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestResultDoesNotAlias(t *testing.T) {
	s, _ := NewSearch(ladder, Options{MaxInvalidRetries: -1})
	reasons := []string{"cpu"}
	_ = s.Record(Step{Target: 1000, Invalid: true, InvalidReasons: reasons})
	reasons[0] = "changed"
	r := s.Result()
	r.Steps[0].InvalidReasons[0] = "changed too"
	r.Reasons[0] = "changed as well"
	if got := s.Result(); got.Steps[0].InvalidReasons[0] != "cpu" || got.Reasons[0] != "cpu" {
		t.Errorf("search state leaked: %+v", got)
	}
}
