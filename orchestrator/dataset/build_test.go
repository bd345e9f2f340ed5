package dataset

import (
	"math"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/knee"
)

// run is one scripted step: target, pass or not, p99.
type run struct {
	target int
	pass   bool
	p99    float64
}

// searchRows turns a script into the step rows of one search.
func searchRows(round int, flavor, tier string, runs ...run) []StepRow {
	var rows []StepRow
	for seq, r := range runs {
		row := StepRow{
			SweepID: "sw", Round: round, ConfigID: flavor + "/" + tier + "/get", Flavor: flavor, Tier: tier, Shape: "get",
			Seq: seq, TargetRPS: r.target, Scheduled: 1000, Completed: 1000, Verdict: VerdictPass,
			P50Ms: r.p99 / 4, P99Ms: r.p99, CoresPer1k: float64(r.target) / 10000, ProxyRSSPeakMB: float64(100 + seq),
			AuditBytesPerReq: float64(2000 + seq), ProxyDiskWriteBytesPerS: float64(r.target) * 2000,
		}
		if !r.pass {
			row.Completed, row.Verdict = 900, VerdictFail
		}
		rows = append(rows, row)
	}
	return rows
}

func concat(parts ...[]StepRow) []StepRow {
	var out []StepRow
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func findKnee(t *testing.T, rows []KneeRow, configID string, round int) KneeRow {
	t.Helper()
	for _, r := range rows {
		if r.ConfigID == configID && r.Round == round {
			return r
		}
	}
	t.Fatalf("no knee row for %s round %d", configID, round)
	return KneeRow{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestBuildKnees(t *testing.T) {
	ladder := []int{1000, 2000, 3000, 4000}
	steps := concat(
		searchRows(0, "envoy", "none", run{1000, true, 1}, run{2000, true, 1.5}, run{3000, true, 2}, run{4000, true, 3}),
		searchRows(0, "waf", "full-crs",
			run{1000, true, 2}, run{2000, true, 3.5}, run{3000, false, 20},
			run{2500, true, 6}, run{2750, false, 15}, run{2500, true, 5}),
		searchRows(0, "waf", "targeted", run{1000, true, 1}), // interrupted sweep
		searchRows(1, "waf", "full-crs",
			run{1000, true, 2}, run{2000, true, 3}, run{3000, false, 20},
			run{2500, false, 9}, run{2250, false, 8}, run{2000, true, 3.2}),
		searchRows(1, "envoy", "none", run{1000, true, 1}, run{2000, true, 1.5}, run{3000, true, 2}, run{4000, true, 3}),
	)
	// The overloaded step holds the most memory; the knee's own is less.
	for i := range steps {
		if steps[i].Round == 0 && steps[i].ConfigID == "waf/full-crs/get" && steps[i].TargetRPS == 3000 {
			steps[i].ProxyRSSPeakMB = 130
		}
	}
	rows, err := BuildKnees(steps, ladder, knee.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	wantOrder := []string{
		"envoy/none/get 0", "envoy/none/get 1", "envoy/none/get all",
		"waf/full-crs/get 0", "waf/full-crs/get 1", "waf/full-crs/get all",
		"waf/targeted/get 0", "waf/targeted/get all",
	}
	if len(rows) != len(wantOrder) {
		t.Fatalf("%d rows, want %d", len(rows), len(wantOrder))
	}
	for i, r := range rows {
		if got := r.ConfigID + " " + RoundLabel(r.Round); got != wantOrder[i] {
			t.Errorf("row %d is %s, want %s", i, got, wantOrder[i])
		}
	}

	envoy := findKnee(t, rows, "envoy/none/get", 0)
	if envoy.KneeRPS != 4000 || envoy.Censored != CensoredAbove || envoy.BoundRPS != 4000 || envoy.KneeVsEnvoy != 1 || envoy.AddedP99MsVsEnvoy != 0 {
		t.Errorf("envoy round 0: %+v", envoy)
	}
	if agg := findKnee(t, rows, "envoy/none/get", AllRounds); agg.Censored != CensoredAbove || agg.BoundRPS != 4000 {
		t.Errorf("envoy aggregate: %+v", agg)
	}

	w0 := findKnee(t, rows, "waf/full-crs/get", 0)
	if w0.KneeRPS != 2500 || w0.LowestFailRPS != 2750 || !w0.Confirmed || w0.Censored != CensoredNone || w0.BoundRPS != 0 {
		t.Errorf("waf round 0 knee: %+v", w0)
	}
	// The confirmation run (p99 5) is the measurement at the knee.
	if w0.P99MsAtKnee != 5 || w0.P50MsAtKnee != 1.25 || w0.CoresPer1kAtKnee != 0.25 || w0.RSSPeakMB != 130 || w0.RSSMBAtKnee != 105 {
		t.Errorf("waf round 0 at knee: %+v", w0)
	}
	if w0.AuditBytesPerReqAtKnee != 2005 || w0.ProxyDiskWriteBytesPerSAtKnee != 2500*2000 {
		t.Errorf("waf round 0 audit log at knee: %g bytes/request, %g bytes/s; want the confirmation run's",
			w0.AuditBytesPerReqAtKnee, w0.ProxyDiskWriteBytesPerSAtKnee)
	}
	if w0.KneeVsEnvoy != 0.625 || !math.IsNaN(w0.AddedP99MsVsEnvoy) {
		t.Errorf("waf round 0 vs envoy: ratio %g, added p99 %g (envoy never ran 2500)", w0.KneeVsEnvoy, w0.AddedP99MsVsEnvoy)
	}

	w1 := findKnee(t, rows, "waf/full-crs/get", 1)
	if w1.KneeRPS != 2000 || !near(w1.AddedP99MsVsEnvoy, 3.2-1.5) {
		t.Errorf("waf round 1: knee %d, added p99 %g", w1.KneeRPS, w1.AddedP99MsVsEnvoy)
	}

	agg := findKnee(t, rows, "waf/full-crs/get", AllRounds)
	if agg.Rounds != 2 || agg.KneeRPS != 2250 || agg.KneeMedianRPS != 2250 || agg.KneeMinRPS != 2000 || agg.KneeMaxRPS != 2500 {
		t.Errorf("aggregate knee: %+v", agg)
	}
	if !near(agg.KneeStddevRPS, math.Sqrt(2*250*250)) || agg.KneeVsEnvoy != 2250.0/4000 || agg.LowestFailRPS != 2500 {
		t.Errorf("aggregate spread: stddev %g, ratio %g, lowest fail %d", agg.KneeStddevRPS, agg.KneeVsEnvoy, agg.LowestFailRPS)
	}
	if !agg.Confirmed || agg.Invalid || agg.P99MsAtKnee != 4.1 || agg.RSSPeakMB != 130 || agg.RSSMBAtKnee != 105 ||
		agg.ProxyDiskWriteBytesPerSAtKnee != 2250*2000 {
		t.Errorf("aggregate at knee: %+v", agg)
	}

	partial := findKnee(t, rows, "waf/targeted/get", 0)
	if !partial.Invalid || partial.KneeRPS != 0 || partial.Rounds != 0 || !strings.Contains(strings.Join(partial.Reasons, ";"), "search incomplete") {
		t.Errorf("interrupted search: %+v", partial)
	}
	partialAgg := findKnee(t, rows, "waf/targeted/get", AllRounds)
	if !partialAgg.Invalid || partialAgg.Rounds != 0 || !math.IsNaN(partialAgg.KneeMedianRPS) ||
		len(partialAgg.Reasons) != 1 || !strings.HasPrefix(partialAgg.Reasons[0], "round 0: search incomplete") {
		t.Errorf("aggregate of an interrupted search: %+v", partialAgg)
	}
}

func TestBuildKneesAggregateCensoring(t *testing.T) {
	ladder := []int{1000, 2000}
	top := []run{{1000, true, 1}, {2000, true, 1}}
	knee1000 := []run{{1000, true, 1}, {2000, false, 1}, {1500, false, 1}, {1250, false, 1}, {1000, true, 1}}
	tests := []struct {
		name   string
		rounds [][]run
		want   string
		knee   int
		bound  int
	}{
		{"majority above", [][]run{top, top, knee1000}, CensoredAbove, 2000, 2000},
		{"minority above", [][]run{top, knee1000, knee1000}, CensoredNone, 1000, 0},
		{"all below", [][]run{{{1000, false, 1}}, {{1000, false, 1}}}, CensoredBelow, 0, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var steps []StepRow
			for i, r := range tt.rounds {
				steps = append(steps, searchRows(i, "waf", "full-crs", r...)...)
			}
			rows, err := BuildKnees(steps, ladder, knee.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			agg := findKnee(t, rows, "waf/full-crs/get", AllRounds)
			if agg.Censored != tt.want || agg.KneeRPS != tt.knee || agg.BoundRPS != tt.bound {
				t.Errorf("censored %q knee %d bound %d, want %q %d %d", agg.Censored, agg.KneeRPS, agg.BoundRPS, tt.want, tt.knee, tt.bound)
			}
		})
	}
}

func TestBuildKneesRejectsStepsTheSearchWouldNotTake(t *testing.T) {
	steps := searchRows(0, "waf", "full-crs", run{1000, true, 1}, run{3000, true, 1})
	_, err := BuildKnees(steps, []int{1000, 2000, 3000}, knee.DefaultOptions())
	if err == nil || !strings.Contains(err.Error(), "round 0, config waf/full-crs/get: replay step 1") {
		t.Fatalf("err = %v", err)
	}
}

func TestBuildKneesEmpty(t *testing.T) {
	rows, err := BuildKnees(nil, []int{1000}, knee.DefaultOptions())
	if err != nil || len(rows) != 0 {
		t.Fatalf("rows %v, err %v", rows, err)
	}
}

// withKind sets the knee kind of scripted rows.
func withKind(rows []StepRow, kinds ...knee.Kind) []StepRow {
	for i := range rows {
		rows[i].Kind = string(kinds[i])
	}
	return rows
}

func TestBuildKneesBelowTheLadder(t *testing.T) {
	ladder := []int{1000, 2000}
	opts := knee.Options{Confirm: true, Floor: 50}
	const (
		L = knee.KindLadder
		D = knee.KindDescend
		B = knee.KindBisect
		C = knee.KindConfirm
	)
	found := func(round int) []StepRow { // capacity about 400 RPS
		return withKind(searchRows(round, "waf", "full-crs",
			run{1000, false, 40}, run{500, false, 30}, run{250, true, 2}, run{380, true, 3}, run{440, false, 20}, run{380, true, 3.5}),
			L, D, D, B, B, C)
	}
	tooSlow := func(round int) []StepRow { // capacity under the floor
		return withKind(searchRows(round, "waf", "full-crs-pl4",
			run{1000, false, 1}, run{500, false, 1}, run{250, false, 1}, run{120, false, 1}, run{60, false, 1}, run{50, false, 1}),
			L, D, D, D, D, D)
	}
	steps := concat(found(0), tooSlow(0), found(1), tooSlow(1))
	rows, err := BuildKnees(steps, ladder, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, round := range []int{0, 1, AllRounds} {
		k := findKnee(t, rows, "waf/full-crs/get", round)
		if k.KneeRPS != 380 || k.LowestFailRPS != 440 || k.Censored != CensoredNone || k.BoundRPS != 0 || !k.Confirmed || k.P99MsAtKnee != 3.5 {
			t.Errorf("found below the ladder, round %s: %+v", RoundLabel(round), k)
		}
		slow := findKnee(t, rows, "waf/full-crs-pl4/get", round)
		if slow.KneeRPS != 0 || slow.Censored != CensoredBelow || slow.BoundRPS != 50 || slow.LowestFailRPS != 50 || slow.Invalid {
			t.Errorf("censored below the floor, round %s: %+v", RoundLabel(round), slow)
		}
	}

	// Without the floor the descend steps are not what the search asks for.
	_, err = BuildKnees(steps, ladder, knee.DefaultOptions())
	if err == nil || !strings.Contains(err.Error(), "round 0, config waf/full-crs/get: replay step 1") {
		t.Fatalf("replay without the floor: err = %v", err)
	}
}

// Rounds censored below different bounds (say a floor changed between
// resumed runs) aggregate to the bound that holds for all of them.
func TestAggregateBound(t *testing.T) {
	rows := []KneeRow{
		{Censored: CensoredBelow, BoundRPS: 50}, {Censored: CensoredBelow, BoundRPS: 1000},
		{Censored: CensoredAbove, BoundRPS: 8000}, {Censored: CensoredAbove, BoundRPS: 10000},
		{Censored: CensoredNone},
	}
	if got := aggregateBound(rows, CensoredBelow); got != 1000 {
		t.Errorf("below: %d, want 1000", got)
	}
	if got := aggregateBound(rows, CensoredAbove); got != 8000 {
		t.Errorf("above: %d, want 8000", got)
	}
	if got := aggregateBound(rows, CensoredNone); got != 0 {
		t.Errorf("none: %d, want 0", got)
	}
}

func TestLowerPositive(t *testing.T) {
	for _, c := range []struct{ a, b, want int }{
		{0, 0, 0}, {0, 500, 500}, {500, 0, 500}, {500, 250, 250}, {250, 500, 250}, {500, 500, 500},
	} {
		if got := lowerPositive(c.a, c.b); got != c.want {
			t.Errorf("lowerPositive(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// A confirmation that fails where the rate had passed is a flip: counted per
// round and summed on the aggregate row.
func TestConfirmFlipsAreCounted(t *testing.T) {
	ladder := []int{1000, 2000}
	opts := knee.Options{Confirm: true, MinGap: 1, GapFraction: 0.05}
	s, err := knee.NewSearch(ladder, opts)
	if err != nil {
		t.Fatal(err)
	}
	var rows []StepRow
	flipped := false
	for seq := 0; ; seq++ {
		rate, kind, done := s.Next()
		if done {
			break
		}
		pass := rate <= 1500
		if kind == knee.KindConfirm && !flipped {
			pass, flipped = false, true // the first confirmation flips
		}
		st := knee.Step{Target: rate, Scheduled: 1000, Completed: 1000}
		if !pass {
			st.Completed = 900
		}
		if err := s.Record(st); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, StepRow{SweepID: "s", ConfigID: "waf/full-crs/get", Flavor: "waf", Tier: "full-crs", Shape: "get",
			Seq: seq, Kind: string(kind), TargetRPS: rate, Scheduled: st.Scheduled, Completed: st.Completed,
			P50Ms: 1, P99Ms: 2, CoresPer1k: 0.1, Verdict: VerdictOf(st)})
	}
	knees, err := BuildKnees(rows, ladder, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range knees {
		if k.ConfirmFlips != 1 {
			t.Errorf("round %d: %d confirm flips, want 1 (knee %d, confirmed %v)", k.Round, k.ConfirmFlips, k.KneeRPS, k.Confirmed)
		}
	}
}

// sloRows are the runs of an SLO search at sloMs, after the capacity
// search's seqs; "fail" fails the capacity criteria (as searchRows), and
// overObjective runs serve everything over the objective.
func sloRows(round, firstSeq int, sloMs float64, runs ...run) []StepRow {
	rows := searchRows(round, "waf", "full-crs", runs...)
	for i := range rows {
		rows[i].Seq += firstSeq
		rows[i].SLOMs = sloMs
	}
	return rows
}

func overObjective(rows []StepRow) []StepRow {
	for i := range rows {
		rows[i].Completed, rows[i].Verdict = rows[i].Scheduled, VerdictFail
	}
	return rows
}

func invalid(rows []StepRow) []StepRow {
	for i := range rows {
		rows[i].Verdict, rows[i].Reasons = VerdictInvalid, []string{"cpu steal"}
	}
	return rows
}

// A capacity knee is contested by a run of the round at or below it that
// failed to serve its rate; runs above it, runs over only their objective
// and invalid runs do not contest it.
func TestBuildKneesContestedByALaterRunThatFailedToServe(t *testing.T) {
	ladder := []int{1000, 2000}
	knee1000 := searchRows(0, "waf", "full-crs", run{1000, true, 1}, run{2000, false, 1}, run{1500, false, 1}, run{1250, false, 1}, run{1000, true, 1})
	top := searchRows(0, "waf", "full-crs", run{1000, true, 1}, run{2000, true, 1})
	tests := []struct {
		name      string
		capacity  []StepRow
		slo       []StepRow
		knee      int
		contested int
	}{
		{"no other run", knee1000, nil, 1000, 0},
		{"served at and below the knee", knee1000, sloRows(0, 10, 50, run{1000, true, 40}, run{500, true, 20}), 1000, 0},
		{"failed at the knee", knee1000, sloRows(0, 10, 250, run{1000, false, 400}, run{500, true, 20}), 1000, 1000},
		{"lowest failure below the knee", knee1000, sloRows(0, 10, 250, run{1000, false, 400}, run{500, false, 300}, run{250, true, 1}), 1000, 500},
		{"failed only above the knee", knee1000, sloRows(0, 10, 250, run{1200, false, 400}), 1000, 0},
		{"over only the objective", knee1000, overObjective(sloRows(0, 10, 10, run{1000, false, 40}, run{500, false, 20})), 1000, 0},
		{"invalid", knee1000, invalid(sloRows(0, 10, 10, run{900, false, 40})), 1000, 0},
		{"censored above, at the top", top, sloRows(0, 10, 250, run{2000, false, 700}), 2000, 2000},
		{"censored above, below the top", top, sloRows(0, 10, 250, run{2000, true, 200}, run{1500, false, 700}), 2000, 1500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := BuildKnees(concat(tt.capacity, tt.slo), ladder, knee.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			r := findKnee(t, rows, "waf/full-crs/get", 0)
			if r.KneeRPS != tt.knee || r.ContestedByRPS != tt.contested {
				t.Errorf("knee %d contested by %d, want %d contested by %d", r.KneeRPS, r.ContestedByRPS, tt.knee, tt.contested)
			}
		})
	}
}

// The aggregate is contested by the lowest of its valid rounds' rates that
// is at or below its (median) knee.
func TestBuildKneesAggregateContestedByTheLowestRound(t *testing.T) {
	ladder := []int{1000, 2000}
	capacity := func(round int) []StepRow {
		return searchRows(round, "waf", "full-crs", run{1000, true, 1}, run{2000, false, 1}, run{1500, false, 1}, run{1250, false, 1}, run{1000, true, 1})
	}
	steps := concat(capacity(0), sloRows(0, 10, 250, run{1000, false, 400}, run{500, true, 1}),
		capacity(1), sloRows(1, 10, 250, run{1000, true, 200}),
		capacity(2), sloRows(2, 10, 250, run{1000, false, 400}, run{500, false, 300}, run{250, true, 1}))
	rows, err := BuildKnees(steps, ladder, knee.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for round, want := range map[int]int{0: 1000, 1: 0, 2: 500, AllRounds: 500} {
		if got := findKnee(t, rows, "waf/full-crs/get", round).ContestedByRPS; got != want {
			t.Errorf("round %d contested by %d, want %d", round, got, want)
		}
	}

	// A round that passed the top, contested at 1500, above the median
	// knee of 1000 the two other rounds set.
	steps = concat(searchRows(0, "waf", "full-crs", run{1000, true, 1}, run{2000, true, 1}), sloRows(0, 10, 250, run{2000, false, 900}, run{1500, false, 700}),
		capacity(1), capacity(2))
	if rows, err = BuildKnees(steps, ladder, knee.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	round0, all := findKnee(t, rows, "waf/full-crs/get", 0), findKnee(t, rows, "waf/full-crs/get", AllRounds)
	if round0.ContestedByRPS != 1500 || all.KneeRPS != 1000 || all.ContestedByRPS != 0 {
		t.Errorf("round 0 contested by %d (want 1500); aggregate knee %d contested by %d (want 1000, 0)", round0.ContestedByRPS, all.KneeRPS, all.ContestedByRPS)
	}
}
