package dataset

import (
	"math"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/knee"
)

// p99Model is a configuration whose corrected p99 rises steeply towards
// its capacity: p99(r) = 1 + 100 (r/1100)^8 ms.
func p99Model(rate int) float64 { return 1 + 100*math.Pow(float64(rate)/1100, 8) }

// highestWithin is the model's true SLO knee: the rate where p99 = slo.
func highestWithin(slo float64) float64 { return 1100 * math.Pow((slo-1)/100, 1.0/8) }

func measuredRow(seq, rate int, kind knee.Kind, slo float64) StepRow {
	return StepRow{Round: 0, ConfigID: "waf/full-crs/get", Seq: seq, Kind: string(kind), SLOMs: slo, TargetRPS: rate,
		Scheduled: int64(rate) * 10, Completed: int64(rate) * 10, P99Ms: p99Model(rate)}
}

// runSLOSearches drives SLOSearches the way the sweep does, measuring the
// model, until every objective is decided.
func runSLOSearches(t *testing.T, rows []StepRow, capacity knee.Result, slos []float64) ([]SLOResult, []StepRow) {
	t.Helper()
	for n := 0; ; n++ {
		results, pending, err := SLOSearches(rows, capacity, slos, knee.Options{Confirm: true, MinGap: 1, GapFraction: 0.05})
		if err != nil {
			t.Fatal(err)
		}
		if pending == nil {
			return results, rows
		}
		if n > 60 {
			t.Fatalf("no end after %d steps", n)
		}
		rate, kind, _ := pending.Search.Next()
		rows = append(rows, measuredRow(len(rows), rate, kind, pending.SLOMs))
	}
}

func TestSLOKneesAreSearchedUnderTheCapacityKnee(t *testing.T) {
	capacityRows := []StepRow{measuredRow(0, 500, knee.KindLadder, 0), measuredRow(1, 1000, knee.KindConfirm, 0)}
	capacity := knee.Result{Done: true, Knee: 1000, Confirmed: true}
	results, rows := runSLOSearches(t, capacityRows, capacity, []float64{10, 250, 50})
	if len(results) != 3 {
		t.Fatalf("results %+v", results)
	}
	// Largest first. p99 at the capacity knee is 47.6 ms: 250 and 50 ms
	// are met there without a search of their own.
	for i, want := range []struct {
		slo    float64
		status string
	}{{250, SLOAtBound}, {50, SLOAtBound}, {10, SLOSearched}} {
		if r := results[i]; r.SLOMs != want.slo || r.Status != want.status {
			t.Errorf("result %d: %+v, want %g ms %s", i, r, want.slo, want.status)
		}
	}
	if results[1].KneeRPS != 1000 || results[1].Bound != 1000 {
		t.Errorf("50 ms: %+v, want the capacity knee", results[1])
	}
	truth := highestWithin(10)
	if got := float64(results[2].KneeRPS); got > truth || got < 0.95*truth {
		t.Errorf("10 ms: knee %v, want the true %.0f RPS within the 5%% resolution (below it)", got, truth)
	}
	// The search's steps are its own, and a replay of them decides the same.
	again, _ := runSLOSearches(t, rows, capacity, []float64{10, 50, 250})
	if again[2] != results[2] || len(objectiveSteps(rows, 10)) < 3 {
		t.Errorf("replayed %+v, first %+v (%d own steps)", again[2], results[2], len(objectiveSteps(rows, 10)))
	}
}

func TestSLOKneesWithoutACapacityKnee(t *testing.T) {
	tests := []struct {
		name     string
		capacity knee.Result
		status   string
	}{
		{"capacity search unfinished", knee.Result{}, SLOUnfinished},
		{"capacity search invalid", knee.Result{Done: true, Invalid: true}, SLOInvalid},
		{"capacity below the floor", knee.Result{Done: true, CensoredBelow: true, Bound: 50}, SLONoCapacity},
	}
	for _, tc := range tests {
		results, pending, err := SLOSearches(nil, tc.capacity, []float64{10, 50}, knee.DefaultOptions())
		if err != nil || pending != nil || len(results) != 2 || results[0].Status != tc.status || results[1].Status != tc.status {
			t.Errorf("%s: %+v, pending %v, err %v; want %s for both", tc.name, results, pending, err, tc.status)
		}
	}
}

// An objective that is not met even at the floor leaves every tighter one
// below the floor too, without searching it.
func TestSLOBelowTheFloorEndsTheTighterObjectives(t *testing.T) {
	capacity := knee.Result{Done: true, Knee: 1000}
	results, rows := runSLOSearches(t, []StepRow{measuredRow(0, 1000, knee.KindConfirm, 0)}, capacity, []float64{0.5, 0.25})
	if results[0].Status != SLOBelowFloor || results[1].Status != SLOBelowFloor || len(objectiveSteps(rows, 0.25)) != 0 {
		t.Errorf("%+v with %d steps for 0.25 ms", results, len(objectiveSteps(rows, 0.25)))
	}
}

// An objective decided at the bound stays decided: a tighter objective's
// later run at the same rate, with a worse p99 (the reference sweep saw
// 150 ms, then 374 ms at one rate), is that objective's evidence only. Read
// as the last run at the bound, it made the larger objective search again.
func TestSLOAtBoundIsTheBoundingSearchsVerdict(t *testing.T) {
	opts := knee.Options{Confirm: true, MinGap: 1, GapFraction: 0.05}
	row := func(seq int, slo, p99 float64) StepRow {
		r := measuredRow(seq, 1000, knee.KindLadder, slo)
		r.P99Ms = p99
		return r
	}
	capacity := knee.Result{Done: true, Knee: 1000, Confirmed: true, CensoredAbove: true, Bound: 1000}
	rows := []StepRow{row(0, 0, 150), row(1, 50, 374)}
	results, pending, err := SLOSearches(rows, capacity, []float64{250, 50}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Status != SLOAtBound || results[0].KneeRPS != 1000 {
		t.Errorf("250 ms: %+v, want met at the bound by the capacity search's run", results)
	}
	if pending == nil || pending.SLOMs != 50 {
		t.Fatalf("pending %+v, want the 50 ms search going on", pending)
	}

	// A searched objective bounds the next one with its own runs: 10 ms is
	// bounded by the 50 ms search, whose run at the bound had a p99 of
	// 30 ms; the capacity search's run (8 ms) and the 250 ms search's
	// (2 ms) at that rate do not decide it.
	rows = []StepRow{row(0, 0, 8), row(1, 50, 30), row(2, 250, 2)}
	results, pending, err = SLOSearches(rows, capacity, []float64{250, 50, 10}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[1].Status != SLOSearched || pending == nil || pending.SLOMs != 10 {
		t.Errorf("results %+v, pending %+v: want 10 ms searched under the 50 ms knee", results, pending)
	}
}
