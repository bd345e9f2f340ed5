package dataset

import (
	"math"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
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

var (
	everyRun = plan.SLOEveryRun
	lastRun  = plan.SLOLastRun
)

// runSLOSearches drives SLOSearches the way the sweep does, measuring
// p99(rate, seq), until every objective is decided.
func runSLOSearches(t *testing.T, rows []StepRow, capacity knee.Result, objectives Objectives, p99 func(rate, seq int) float64) ([]SLOResult, []StepRow) {
	t.Helper()
	for n := 0; ; n++ {
		results, pending, err := SLOSearches(rows, capacity, objectives, knee.Options{Confirm: true, MinGap: 1, GapFraction: 0.05})
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
		row := measuredRow(len(rows), rate, kind, pending.SLOMs)
		row.P99Ms = p99(rate, len(rows))
		rows = append(rows, row)
	}
}

func modelP99(rate, _ int) float64 { return p99Model(rate) }

func TestSLOKneesAreSearchedUnderTheCapacityKnee(t *testing.T) {
	for _, rule := range []plan.SLORule{everyRun, lastRun} {
		t.Run(string(rule), func(t *testing.T) {
			capacityRows := []StepRow{measuredRow(0, 500, knee.KindLadder, 0), measuredRow(1, 1000, knee.KindConfirm, 0)}
			capacity := knee.Result{Done: true, Knee: 1000, Confirmed: true}
			results, rows := runSLOSearches(t, capacityRows, capacity, Objectives{[]float64{10, 250, 50}, rule}, modelP99)
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
			again, _ := runSLOSearches(t, rows, capacity, Objectives{[]float64{10, 50, 250}, rule}, modelP99)
			if again[2] != results[2] || len(objectiveSteps(rows, 10)) < 3 {
				t.Errorf("replayed %+v, first %+v (%d own steps)", again[2], results[2], len(objectiveSteps(rows, 10)))
			}
		})
	}
}

// Under SLOEveryRun the capacity knee's failing run at the bound is the
// 10 ms search's first step: it is not measured again.
func TestSLOEveryRunDoesNotRemeasureAFailedBound(t *testing.T) {
	capacityRows := []StepRow{measuredRow(0, 500, knee.KindLadder, 0), measuredRow(1, 1000, knee.KindConfirm, 0)}
	capacity := knee.Result{Done: true, Knee: 1000, Confirmed: true}
	stepsAtBound := map[plan.SLORule]int{everyRun: 0, lastRun: 1}
	for rule, wantAtBound := range stepsAtBound {
		_, rows := runSLOSearches(t, capacityRows, capacity, Objectives{[]float64{10}, rule}, modelP99)
		atBound := 0
		for _, r := range objectiveSteps(rows, 10) {
			if r.TargetRPS == 1000 {
				atBound++
			}
		}
		if atBound != wantAtBound {
			t.Errorf("%s: the 10 ms search ran %d steps at the bound, want %d", rule, atBound, wantAtBound)
		}
	}
}

// The cases the reference sweeps met: near the capacity knee a proxy's p99
// differs from run to run (nginx-modsecurity at 1,000 RPS: 35 ms, then
// 7.2 ms on the confirmation run).
func TestSLOAtTheBoundUnderEachRule(t *testing.T) {
	type want struct {
		status  string // decided: its status; "" when a search wants a step
		nextRPS int    // the step the search wants
	}
	tests := []struct {
		name  string
		p99s  []float64 // capacity runs at the bound, in order; NaN marks an invalid run
		every want
		last  want
	}{
		{"every run met it", []float64{8, 9.5}, want{status: SLOAtBound}, want{status: SLOAtBound}},
		{"an earlier run was over", []float64{35, 7.2}, want{nextRPS: 500}, want{status: SLOContested}},
		{"the last run was over", []float64{7.2, 35}, want{nextRPS: 500}, want{nextRPS: 1000}},
		{"an invalid run does not count", []float64{8, math.NaN(), 9.5}, want{status: SLOAtBound}, want{status: SLOAtBound}},
	}
	capacity := knee.Result{Done: true, Knee: 1000, Confirmed: true}
	for _, tt := range tests {
		var rows []StepRow
		for i, p99 := range tt.p99s {
			r := measuredRow(i, 1000, knee.KindLadder, 0)
			r.P99Ms = p99
			if math.IsNaN(p99) {
				r.P99Ms, r.Verdict = 500, VerdictInvalid
			}
			rows = append(rows, r)
		}
		for rule, w := range map[plan.SLORule]want{everyRun: tt.every, lastRun: tt.last} {
			results, pending, err := SLOSearches(rows, capacity, Objectives{[]float64{10}, rule}, knee.DefaultOptions())
			if err != nil {
				t.Fatalf("%s, %s: %v", tt.name, rule, err)
			}
			var got want
			if pending != nil {
				got.nextRPS, _, _ = pending.Search.Next()
			} else if len(results) == 1 {
				got.status = results[0].Status
			}
			if got != w {
				t.Errorf("%s, %s: %+v (results %+v), want %+v", tt.name, rule, got, results, w)
			}
		}
	}
}

// noisyP99 is the model with a spike on some runs (a pseudo-random third
// of them, by seed and seq): a proxy whose p99 near its knee depends on
// the run as much as on the rate.
func noisyP99(seed int) func(rate, seq int) float64 {
	return func(rate, seq int) float64 {
		h := uint32(seed*7919+seq*104729) * 2654435761
		if h%3 == 0 {
			return p99Model(rate) * 6
		}
		return p99Model(rate)
	}
}

// Under SLOEveryRun no objective's knee is a rate where a run of the
// capacity search, of a larger objective's search or of its own failed it;
// under SLOLastRun exactly the at_bound knees that break this are marked
// contested. Differential, over noisy capacity runs built to make the two
// rules disagree.
func TestSLOEveryRunKneesHaveNoFailedRun(t *testing.T) {
	slos := []float64{250, 50, 10}
	capacity := knee.Result{Done: true, Knee: 1000, Confirmed: true}
	contested, disagreed := 0, 0
	for seed := range 200 {
		p99 := noisyP99(seed)
		capacityRows := []StepRow{measuredRow(0, 500, knee.KindLadder, 0), measuredRow(1, 1000, knee.KindLadder, 0), measuredRow(2, 1000, knee.KindConfirm, 0)}
		for i := range capacityRows {
			capacityRows[i].P99Ms = p99(capacityRows[i].TargetRPS, 1000+seed*3+i)
		}
		every, rows := runSLOSearches(t, capacityRows, capacity, Objectives{slos, everyRun}, p99)
		for _, res := range every {
			if res.KneeRPS == 0 {
				continue
			}
			for _, r := range rowsUpTo(rows, res.SLOMs) {
				if r.TargetRPS == res.KneeRPS && r.P99Ms > res.SLOMs {
					t.Errorf("seed %d: every_run: %g ms knee %d (%s), but a run there had p99 %g ms", seed, res.SLOMs, res.KneeRPS, res.Status, r.P99Ms)
				}
			}
		}
		last, rows := runSLOSearches(t, capacityRows, capacity, Objectives{slos, lastRun}, p99)
		for i, res := range last {
			failed := false
			for _, r := range rowsUpTo(rows, res.SLOMs) {
				failed = failed || (r.TargetRPS == res.KneeRPS && r.P99Ms > res.SLOMs && r.SLOMs != res.SLOMs)
			}
			if (res.Status == SLOContested) != (failed && res.KneeRPS == res.Bound && res.Status != SLOSearched) {
				t.Errorf("seed %d: last_run: %+v, a larger search's run failed it at the knee: %v", seed, res, failed)
			}
			if res.Status == SLOContested {
				contested++
			}
			if res.KneeRPS != every[i].KneeRPS {
				disagreed++
			}
		}
	}
	if contested == 0 || disagreed == 0 {
		t.Errorf("the noise never made the rules disagree (%d contested, %d different knees): the test proves nothing", contested, disagreed)
	}
}

// rowsUpTo are the runs that precede and make an objective's decision: the
// capacity search's and those of the objectives at least as large.
func rowsUpTo(rows []StepRow, slo float64) []StepRow {
	var out []StepRow
	for _, r := range rows {
		if r.SLOMs == 0 || r.SLOMs >= slo {
			out = append(out, r)
		}
	}
	return out
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
		results, pending, err := SLOSearches(nil, tc.capacity, Objectives{[]float64{10, 50}, everyRun}, knee.DefaultOptions())
		if err != nil || pending != nil || len(results) != 2 || results[0].Status != tc.status || results[1].Status != tc.status {
			t.Errorf("%s: %+v, pending %v, err %v; want %s for both", tc.name, results, pending, err, tc.status)
		}
	}
}

// An objective that is not met even at the floor leaves every tighter one
// below the floor too, without searching it.
func TestSLOBelowTheFloorEndsTheTighterObjectives(t *testing.T) {
	capacity := knee.Result{Done: true, Knee: 1000}
	results, rows := runSLOSearches(t, []StepRow{measuredRow(0, 1000, knee.KindConfirm, 0)}, capacity, Objectives{[]float64{0.5, 0.25}, everyRun}, modelP99)
	if results[0].Status != SLOBelowFloor || results[1].Status != SLOBelowFloor || len(objectiveSteps(rows, 0.25)) != 0 {
		t.Errorf("%+v with %d steps for 0.25 ms", results, len(objectiveSteps(rows, 0.25)))
	}
}

// An objective decided at the bound stays decided: a tighter objective's
// later run at the same rate, with a worse p99 (the reference sweep saw
// 150 ms, then 374 ms at one rate), is that objective's evidence only. Read
// as the last run at the bound, it made the larger objective search again.
func TestSLOLastRunAtBoundIsTheBoundingSearchsVerdict(t *testing.T) {
	opts := knee.Options{Confirm: true, MinGap: 1, GapFraction: 0.05}
	row := func(seq int, slo, p99 float64) StepRow {
		r := measuredRow(seq, 1000, knee.KindLadder, slo)
		r.P99Ms = p99
		return r
	}
	capacity := knee.Result{Done: true, Knee: 1000, Confirmed: true, CensoredAbove: true, Bound: 1000}
	rows := []StepRow{row(0, 0, 150), row(1, 50, 374)}
	results, pending, err := SLOSearches(rows, capacity, Objectives{[]float64{250, 50}, lastRun}, opts)
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
	results, pending, err = SLOSearches(rows, capacity, Objectives{[]float64{250, 50, 10}, lastRun}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[1].Status != SLOSearched || pending == nil || pending.SLOMs != 10 {
		t.Errorf("results %+v, pending %+v: want 10 ms searched under the 50 ms knee", results, pending)
	}
}

// An SLO knee row counts the calls its p99 was read from: those of the
// last run at the knee within the objective; the aggregate keeps the
// fewest of the rounds that met it.
func TestSLOKneeRowsCountTheCallsBehindTheirP99(t *testing.T) {
	run := func(seq int, calls int64, p99 float64) StepRow {
		r := measuredRow(seq, 40, knee.KindBisect, 10)
		r.Scheduled, r.Completed, r.P99Ms = calls, calls, p99
		return r
	}
	rows := []StepRow{run(0, 790, 8), run(1, 800, 12)} // the second is over 10 ms
	got := sloRoundRow(rows, SLOResult{SLOMs: 10, KneeRPS: 40, Status: SLOSearched})
	if got.CallsAtKnee != 790 || got.P99Ms != 8 {
		t.Errorf("round row: calls %d, p99 %g; want 790 calls of the run within 10 ms (p99 8)", got.CallsAtKnee, got.P99Ms)
	}

	round := func(rps int, calls int64, status string) SLOKneeRow {
		return SLOKneeRow{SLOMs: 10, KneeRPS: rps, CallsAtKnee: calls, Status: status}
	}
	tests := []struct {
		name   string
		rounds []SLOKneeRow
		want   int64
	}{
		{"fewest of those met", []SLOKneeRow{round(60, 1200, SLOSearched), round(40, 790, SLOSearched), round(0, 0, SLOBelowFloor)}, 790},
		{"none met", []SLOKneeRow{round(0, 0, SLOBelowFloor)}, 0},
		{"none decided", []SLOKneeRow{{SLOMs: 10, KneeRPS: 40, CallsAtKnee: 790, Status: SLOUnfinished}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sloAggregate(tt.rounds).CallsAtKnee; got != tt.want {
				t.Errorf("aggregate calls_at_knee %d, want %d", got, tt.want)
			}
		})
	}
}
