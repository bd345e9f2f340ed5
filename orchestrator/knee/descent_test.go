package knee

import (
	"math"
	"reflect"
	"testing"
)

// floorOpts is the reference method with the descent down to 50 RPS.
func floorOpts() Options {
	o := DefaultOptions()
	o.Floor = 50
	return o
}

// descentScripts are searches that fail the bottom of the ladder (1000) with
// the descent on.
var descentScripts = []struct {
	name   string
	ladder []int
	opts   Options
	script []move
	want   Result // Steps is filled in from the script
}{
	{
		name:   "descent to a pass, then bisect and confirm",
		ladder: ladder,
		opts:   floorOpts(),
		script: []move{
			{1000, KindLadder, fail},
			{500, KindDescend, fail},
			{250, KindDescend, pass},
			{380, KindBisect, pass},  // gap 250 > max(250*0.25, 5% of 250) = 62.5; midpoint 375 -> 380
			{440, KindBisect, fail},  // gap 120 > max(250*0.38, 19) = 95; midpoint 440
			{380, KindConfirm, pass}, // gap 60 <= 95
		},
		want: Result{Done: true, Knee: 380, LowestFail: 440, Confirmed: true},
	},
	{
		name:   "failing the floor is censored below the floor",
		ladder: ladder,
		opts:   floorOpts(),
		script: []move{
			{1000, KindLadder, fail}, {500, KindDescend, fail}, {250, KindDescend, fail},
			{120, KindDescend, fail}, {60, KindDescend, fail}, {50, KindDescend, fail}, // 30 is below the floor
		},
		want: Result{Done: true, CensoredBelow: true, Bound: 50, LowestFail: 50},
	},
	{
		name:   "the halving never goes below the floor",
		ladder: []int{1000, 2000},
		opts:   Options{Confirm: true, Floor: 300},
		script: []move{{1000, KindLadder, fail}, {500, KindDescend, fail}, {300, KindDescend, fail}},
		want:   Result{Done: true, CensoredBelow: true, Bound: 300, LowestFail: 300},
	},
	{
		name:   "a floor that is not a multiple of 10 is still the last try",
		ladder: []int{1000},
		opts:   Options{Confirm: true, Floor: 55},
		script: []move{
			{1000, KindLadder, fail}, {500, KindDescend, fail}, {250, KindDescend, fail},
			{120, KindDescend, fail}, {60, KindDescend, fail}, {55, KindDescend, pass},
			{55, KindConfirm, pass}, // gap 5 <= 250*0.055
		},
		want: Result{Done: true, Knee: 55, LowestFail: 60, Confirmed: true},
	},
	{
		name:   "gap rule at low rates: the 250 RPS floor of the gap scales down",
		ladder: ladder,
		opts:   floorOpts(),
		script: []move{
			{1000, KindLadder, fail}, {500, KindDescend, fail}, {250, KindDescend, fail},
			{120, KindDescend, fail}, {60, KindDescend, pass},
			{90, KindBisect, pass},  // gap 60 > max(250*0.06, 3) = 15 (unscaled, 60 <= 250 would stop here)
			{110, KindBisect, fail}, // gap 30 > max(250*0.09, 4.5) = 22.5; midpoint 105 -> 110
			{90, KindConfirm, pass}, // gap 20 <= 22.5
		},
		want: Result{Done: true, Knee: 90, LowestFail: 110, Confirmed: true},
	},
	{
		name:   "descent with an invalid step",
		ladder: ladder,
		opts:   floorOpts(),
		script: []move{
			{1000, KindLadder, fail},
			{500, KindDescend, invalid}, {500, KindRetry, fail}, // a retried descend step descends on failure
			{250, KindDescend, invalid}, {250, KindRetry, pass},
			{380, KindBisect, invalid}, {380, KindRetry, pass},
			{440, KindBisect, fail},
			{380, KindConfirm, pass},
		},
		want: Result{Done: true, Knee: 380, LowestFail: 440, Confirmed: true},
	},
	{
		name:   "still invalid in the descent ends the search",
		ladder: ladder,
		opts:   floorOpts(),
		script: []move{{1000, KindLadder, fail}, {500, KindDescend, invalid}, {500, KindRetry, invalid}},
		want:   Result{Done: true, Invalid: true, Reasons: []string{"reason b", "reason c"}, LowestFail: 1000},
	},
	{
		name:   "failed confirmation below the ladder resumes the descent",
		ladder: ladder,
		opts:   floorOpts(),
		script: []move{
			{1000, KindLadder, fail}, {500, KindDescend, fail}, {250, KindDescend, pass},
			{380, KindBisect, fail}, {320, KindBisect, fail}, {290, KindBisect, fail},
			{250, KindConfirm, fail}, // nothing passed below 250
			{120, KindDescend, pass},
			{190, KindBisect, pass}, {220, KindBisect, fail},
			{190, KindConfirm, pass},
		},
		want: Result{Done: true, Knee: 190, LowestFail: 220, Confirmed: true},
	},
	{
		name:   "failed confirmation at the bottom of the ladder descends",
		ladder: []int{1000, 1200},
		opts:   floorOpts(),
		script: []move{
			{1000, KindLadder, pass}, {1200, KindLadder, fail}, {1000, KindConfirm, fail},
			{500, KindDescend, pass},
			{750, KindBisect, pass}, // gap 500 > 125
			{900, KindBisect, fail}, // gap 250 > 187.5; midpoint 875 -> 900 (unit 50 <= half of 187.5)
			{750, KindConfirm, pass},
		},
		want: Result{Done: true, Knee: 750, LowestFail: 900, Confirmed: true},
	},
	{
		name:   "without confirm the descent stops at the gap",
		ladder: ladder,
		opts:   Options{Floor: 50},
		script: []move{
			{1000, KindLadder, fail}, {500, KindDescend, fail}, {250, KindDescend, pass},
			{380, KindBisect, pass}, {440, KindBisect, fail},
		},
		want: Result{Done: true, Knee: 380, LowestFail: 440},
	},
}

func TestDescentScripts(t *testing.T) {
	for _, tt := range descentScripts {
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

func TestReplayEquivalenceWithDescent(t *testing.T) {
	for _, tt := range descentScripts {
		t.Run(tt.name, func(t *testing.T) {
			got := checkReplayEquivalence(t, tt.ladder, tt.opts, tt.script)
			if !got.Done || got.Knee != tt.want.Knee || got.Bound != tt.want.Bound {
				t.Errorf("final result %+v", got)
			}
		})
	}
}

// Descend steps recorded by a search with a floor cannot be replayed without
// it: the search without the descent ended at the bottom of the ladder.
func TestReplayOfDescentNeedsTheFloor(t *testing.T) {
	steps := []Step{makeStep(1000, fail, ""), makeStep(500, pass, "")}
	if _, err := Replay(ladder, floorOpts(), steps); err != nil {
		t.Fatal(err)
	}
	if _, err := Replay(ladder, DefaultOptions(), steps); err == nil {
		t.Fatal("descend steps replayed without a floor")
	}
}

func TestGapToleranceAndMidpoint(t *testing.T) {
	tests := []struct {
		pass, fail int
		tolerance  float64
		mid        int
	}{
		{8000, 9000, 400, 8500}, // 5% of the pass wins
		{4000, 4500, 250, 4250}, // MinGap wins
		{1000, 1100, 250, 1050}, // at the bottom of the ladder: unscaled, multiples of 50
		{3500, 3750, 250, 3650}, // 3625 rounds half up to 3650
		{500, 1000, 125, 750},   // below the ladder: 250 * 0.5, multiples of 10
		{250, 500, 62.5, 380},   // 375 rounds half up to 380
		{120, 250, 30, 190},     // 185 -> 190
		{60, 120, 15, 90},
		{50, 60, 12.5, 55}, // unit 5: no larger than half the tolerance
	}
	for _, tt := range tests {
		s, err := NewSearch(ladder, floorOpts())
		if err != nil {
			t.Fatal(err)
		}
		s.highestPass, s.lowestFail = tt.pass, tt.fail
		if got := s.gapTolerance(); math.Abs(got-tt.tolerance) > 1e-9 {
			t.Errorf("pass %d: gap tolerance %g, want %g", tt.pass, got, tt.tolerance)
		}
		if got := s.midpoint(); got != tt.mid {
			t.Errorf("midpoint(%d, %d) = %d, want %d", tt.pass, tt.fail, got, tt.mid)
		}
	}
}

func TestDescendRate(t *testing.T) {
	tests := []struct{ rate, floor, want int }{
		{1000, 50, 500}, {500, 50, 250}, {250, 50, 120}, {120, 50, 60}, {60, 50, 50},
		{1000, 600, 600}, {3000, 100, 1500}, {1010, 10, 500}, {15, 1, 1},
	}
	for _, tt := range tests {
		if got := descendRate(tt.rate, tt.floor); got != tt.want {
			t.Errorf("descendRate(%d, %d) = %d, want %d", tt.rate, tt.floor, got, tt.want)
		}
	}
}

// With the descent a capacity below the ladder is found to the scaled gap,
// and the floor bounds what can be found.
func TestDescentConvergesForEveryCapacity(t *testing.T) {
	opts := floorOpts()
	for capacity := 10; capacity < ladder[0]; capacity += 10 {
		r := runAgainst(t, capacity, opts)
		if capacity < opts.Floor {
			if !r.CensoredBelow || r.Knee != 0 || r.Bound != opts.Floor {
				t.Errorf("capacity %d: %+v, want censored below %d", capacity, r, opts.Floor)
			}
			continue
		}
		tolerance := math.Max(250*float64(r.Knee)/float64(ladder[0]), 0.05*float64(r.Knee))
		if r.Knee > capacity || r.LowestFail <= capacity || float64(r.LowestFail-r.Knee) > tolerance || !r.Confirmed || r.Bound != 0 {
			t.Errorf("capacity %d: knee %d, lowest fail %d (tolerance %g), confirmed %v, bound %d",
				capacity, r.Knee, r.LowestFail, tolerance, r.Confirmed, r.Bound)
		}
	}
}

// The floor changes nothing for a configuration that passes the bottom of
// the ladder: same requests, same result.
func TestFloorDoesNotChangeSearchesOnTheLadder(t *testing.T) {
	for capacity := ladder[0]; capacity <= 12000; capacity += 50 {
		off, offTrace := traceAgainst(t, capacity, DefaultOptions())
		on, onTrace := traceAgainst(t, capacity, floorOpts())
		if !reflect.DeepEqual(off, on) || !reflect.DeepEqual(offTrace, onTrace) {
			t.Fatalf("capacity %d: floor 0 %v -> %+v\nfloor 50 %v -> %+v", capacity, offTrace, off, onTrace, on)
		}
	}
	// Below the ladder, floor 0 is the notes' definition: censored below the
	// bottom after a single step.
	r, trace := traceAgainst(t, 400, DefaultOptions())
	if len(trace) != 1 || !r.CensoredBelow || r.Bound != ladder[0] || r.Knee != 0 {
		t.Errorf("floor 0 below the ladder: %v -> %+v", trace, r)
	}
}
