package dataset

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// BuildKnees derives knees.csv from steps.csv alone: every (round, config)
// search is replayed with the sweep's ladder and options (so the knee is
// exactly what the sweep decided), then compared with the envoy flavor and
// aggregated over rounds. opts must be the sweep's, Floor included
// (plan.Plan.KneeOptions): descend steps do not replay without the floor.
//
// Rows come per config, in the order configs first appear in steps: one row
// per round, then the aggregate row (Round AllRounds), which is written even
// for a single round so that readers can always take the "all" rows. The
// aggregate is over valid rounds: knee_rps is the median knee (rounded), the
// spread columns give median/min/max/sample stddev, latencies and costs at
// the knee are medians of the rounds' values, rss_peak_mb and
// rss_mb_at_knee the maximum,
// confirmed means every valid round confirmed, and censored is "above" or
// "below" only when more than half of the valid rounds were, with bound_rps
// the most conservative bound of those rounds (the lowest when above, the
// highest when below). A search that never finished (interrupted sweep) is
// reported invalid.
func BuildKnees(steps []StepRow, ladder []int, opts knee.Options) ([]KneeRow, error) {
	order, searches := groupSearches(CapacitySteps(steps))
	var roundRows []KneeRow
	for _, key := range order {
		rows := searches[key]
		res, err := knee.Replay(ladder, opts, kneeSteps(rows))
		if err != nil {
			return nil, fmt.Errorf("build knees: round %d, config %s: %w", key.round, key.configID, err)
		}
		row := roundRow(rows, res.Result())
		row.ContestedByRPS = contestedBy(searchSteps(steps, key.round, key.configID), row)
		roundRows = append(roundRows, row)
	}
	compareRoundsWithEnvoy(roundRows, steps)
	out := withAggregates(roundRows)
	for i := range out {
		out[i].Cost = FitCost(costSteps(steps, out[i]))
	}
	return out, nil
}

// costSteps are the steps k's cost model is fitted to: its configuration's
// in k's round (every round for the aggregate), of every search and
// Envoy's baselines.
func costSteps(steps []StepRow, k KneeRow) []StepRow {
	var out []StepRow
	for _, s := range steps {
		if s.ConfigID == k.ConfigID && (k.Round == AllRounds || s.Round == k.Round) {
			out = append(out, s)
		}
	}
	return out
}

// groupSearches splits steps by search, each in seq order, and lists the
// searches by config (first appearance) then round.
func groupSearches(steps []StepRow) ([]searchKey, map[searchKey][]StepRow) {
	searches := map[searchKey][]StepRow{}
	configRank := map[string]int{}
	var order []searchKey
	for _, s := range steps {
		key := searchKey{s.Round, s.ConfigID}
		if _, ok := configRank[s.ConfigID]; !ok {
			configRank[s.ConfigID] = len(configRank)
		}
		if _, ok := searches[key]; !ok {
			order = append(order, key)
		}
		searches[key] = append(searches[key], s)
	}
	for _, rows := range searches {
		slices.SortFunc(rows, func(a, b StepRow) int { return cmp.Compare(a.Seq, b.Seq) })
	}
	slices.SortFunc(order, func(a, b searchKey) int {
		return cmp.Or(cmp.Compare(configRank[a.configID], configRank[b.configID]), cmp.Compare(a.round, b.round))
	})
	return order, searches
}

func kneeSteps(rows []StepRow) []knee.Step {
	steps := make([]knee.Step, len(rows))
	for i, r := range rows {
		steps[i] = r.KneeStep()
	}
	return steps
}

func roundRow(rows []StepRow, res knee.Result) KneeRow {
	first := rows[0]
	r := KneeRow{
		SweepID: first.SweepID, Round: first.Round, ConfigID: first.ConfigID,
		Flavor: first.Flavor, Tier: first.Tier, Shape: first.Shape, Transport: first.Transport,
		KneeRPS: res.Knee, Censored: censoring(res), BoundRPS: res.Bound, Invalid: res.Invalid, Reasons: res.Reasons,
		Confirmed: res.Confirmed, LowestFailRPS: res.LowestFail,
		P50MsAtKnee: math.NaN(), P99MsAtKnee: math.NaN(), CoresPer1kAtKnee: math.NaN(), RSSMBAtKnee: math.NaN(),
		AuditBytesPerReqAtKnee: math.NaN(), ProxyDiskWriteBytesPerSAtKnee: math.NaN(),
		RSSPeakMB:   maxOf(rows, func(s StepRow) float64 { return s.ProxyRSSPeakMB }),
		KneeVsEnvoy: math.NaN(), AddedP99MsVsEnvoy: math.NaN(),
		KneeMedianRPS: math.NaN(), KneeMinRPS: math.NaN(), KneeMaxRPS: math.NaN(), KneeStddevRPS: math.NaN(),
	}
	if !res.Done {
		r.Invalid, r.KneeRPS, r.BoundRPS = true, 0, 0
		r.Reasons = append(r.Reasons, "search incomplete: the sweep stopped before this config finished")
	}
	if !r.Invalid {
		r.Rounds = 1
	}
	if at, ok := lastPassAt(rows, r.KneeRPS, 0); ok {
		r.P50MsAtKnee, r.P99MsAtKnee, r.CoresPer1kAtKnee = at.P50Ms, at.P99Ms, at.CoresPer1k
		r.RSSMBAtKnee = at.ProxyRSSPeakMB
		r.AuditBytesPerReqAtKnee, r.ProxyDiskWriteBytesPerSAtKnee = at.AuditBytesPerReq, at.ProxyDiskWriteBytesPerS
	}
	for _, s := range rows {
		if s.Kind == string(knee.KindConfirm) && s.Verdict == VerdictFail {
			r.ConfirmFlips++
		}
	}
	return r
}

// contestedBy is the lowest rate at or below k's knee at which a valid run
// among rows (the round's runs of k's configuration, of every search)
// failed what the capacity search judges, its latency objective aside; 0
// when none. The capacity search's own failures all lie above its knee,
// so only the SLO searches' runs can contest it. Their runs that failed
// only their objective do not: the capacity knee makes no latency claim.
func contestedBy(rows []StepRow, k KneeRow) int {
	if k.Invalid || k.KneeRPS <= 0 {
		return 0
	}
	lowest := 0
	for _, s := range rows {
		st := s.KneeStep()
		st.MaxP99Ms = 0
		if st.Invalid || st.Passed() || s.TargetRPS > k.KneeRPS {
			continue
		}
		lowest = lowerPositive(lowest, s.TargetRPS)
	}
	return lowest
}

func censoring(res knee.Result) string {
	switch {
	case res.CensoredAbove:
		return CensoredAbove
	case res.CensoredBelow:
		return CensoredBelow
	}
	return CensoredNone
}

// lastPassAt returns the last run at target, of any search, that passed
// the capacity criteria and, when sloMs > 0, kept its p99 within sloMs: the
// confirmation run when there is one, since that is the measurement the
// knee rests on.
func lastPassAt(rows []StepRow, target int, sloMs float64) (StepRow, bool) {
	for i := len(rows) - 1; i >= 0; i-- {
		st := rows[i].KneeStep()
		st.MaxP99Ms = sloMs
		if rows[i].TargetRPS == target && target > 0 && st.Passed() {
			return rows[i], true
		}
	}
	return StepRow{}, false
}

// compareRoundsWithEnvoy fills the columns relative to the vanilla envoy
// flavor of the same shape and round.
func compareRoundsWithEnvoy(rows []KneeRow, steps []StepRow) {
	type roundShape struct {
		round int
		shape string
	}
	envoy := map[roundShape]KneeRow{}
	for _, r := range rows {
		if r.Flavor == plan.FlavorEnvoy {
			envoy[roundShape{r.Round, r.Shape}] = r
		}
	}
	for i := range rows {
		r := &rows[i]
		e, ok := envoy[roundShape{r.Round, r.Shape}]
		if !ok {
			continue
		}
		r.KneeVsEnvoy = kneeRatio(*r, e)
		envoySteps := searchSteps(steps, r.Round, e.ConfigID)
		if at, ok := lastPassAt(envoySteps, r.KneeRPS, 0); ok {
			r.AddedP99MsVsEnvoy = r.P99MsAtKnee - at.P99Ms
		}
	}
}

func kneeRatio(r, envoy KneeRow) float64 {
	if r.Invalid || envoy.Invalid || r.KneeRPS <= 0 || envoy.KneeRPS <= 0 {
		return math.NaN()
	}
	return float64(r.KneeRPS) / float64(envoy.KneeRPS)
}

func searchSteps(steps []StepRow, round int, configID string) []StepRow {
	var out []StepRow
	for _, s := range steps {
		if s.Round == round && s.ConfigID == configID {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b StepRow) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// withAggregates appends after each config's round rows its aggregate row.
func withAggregates(roundRows []KneeRow) []KneeRow {
	var out, aggregates []KneeRow
	for i := 0; i < len(roundRows); {
		j := i
		for j < len(roundRows) && roundRows[j].ConfigID == roundRows[i].ConfigID {
			j++
		}
		agg := aggregate(roundRows[i:j])
		out = append(append(out, roundRows[i:j]...), agg)
		aggregates = append(aggregates, agg)
		i = j
	}
	envoy := map[string]KneeRow{}
	for _, a := range aggregates {
		if a.Flavor == plan.FlavorEnvoy {
			envoy[a.Shape] = a
		}
	}
	for i := range out {
		if e, ok := envoy[out[i].Shape]; ok && out[i].Round == AllRounds {
			out[i].KneeVsEnvoy = kneeRatio(out[i], e)
		}
	}
	return out
}

func aggregate(rounds []KneeRow) KneeRow {
	a := rounds[0]
	a.Round, a.Reasons, a.KneeVsEnvoy = AllRounds, nil, math.NaN() // the ratio is set by withAggregates
	var valid []KneeRow
	for _, r := range rounds {
		if r.Invalid {
			for _, reason := range r.Reasons {
				a.Reasons = append(a.Reasons, fmt.Sprintf("round %d: %s", r.Round, reason))
			}
			continue
		}
		valid = append(valid, r)
	}
	a.Rounds = len(valid)
	if len(valid) == 0 {
		a = invalidAggregate(a)
		a.BoundRPS = lowestBound(rounds)
		return a
	}
	knees := values(valid, func(r KneeRow) float64 { return float64(r.KneeRPS) })
	a.KneeMedianRPS, a.KneeMinRPS, a.KneeMaxRPS = Median(knees), slices.Min(knees), slices.Max(knees)
	a.KneeStddevRPS = sampleStddev(knees)
	a.KneeRPS = int(math.Round(a.KneeMedianRPS))
	a.Censored = majorityCensoring(valid)
	a.BoundRPS = aggregateBound(valid, a.Censored)
	a.Invalid = false
	a.Confirmed = !slices.ContainsFunc(valid, func(r KneeRow) bool { return !r.Confirmed })
	a.ConfirmFlips = 0
	for _, r := range rounds {
		a.ConfirmFlips += r.ConfirmFlips
	}
	a.LowestFailRPS = int(math.Round(zeroIfNaN(Median(values(valid, func(r KneeRow) float64 {
		if r.LowestFailRPS == 0 {
			return math.NaN() // nothing failed in that round
		}
		return float64(r.LowestFailRPS)
	})))))
	a.ContestedByRPS = 0
	for _, r := range valid {
		// A round's contesting rate above the median knee does not contest it.
		if r.ContestedByRPS <= a.KneeRPS {
			a.ContestedByRPS = lowerPositive(a.ContestedByRPS, r.ContestedByRPS)
		}
	}
	a.P50MsAtKnee = Median(values(valid, func(r KneeRow) float64 { return r.P50MsAtKnee }))
	a.P99MsAtKnee = Median(values(valid, func(r KneeRow) float64 { return r.P99MsAtKnee }))
	a.CoresPer1kAtKnee = Median(values(valid, func(r KneeRow) float64 { return r.CoresPer1kAtKnee }))
	a.RSSPeakMB = maxOf(valid, func(r KneeRow) float64 { return r.RSSPeakMB })
	a.RSSMBAtKnee = maxOf(valid, func(r KneeRow) float64 { return r.RSSMBAtKnee })
	a.AuditBytesPerReqAtKnee = Median(values(valid, func(r KneeRow) float64 { return r.AuditBytesPerReqAtKnee }))
	a.ProxyDiskWriteBytesPerSAtKnee = Median(values(valid, func(r KneeRow) float64 { return r.ProxyDiskWriteBytesPerSAtKnee }))
	a.AddedP99MsVsEnvoy = Median(values(valid, func(r KneeRow) float64 { return r.AddedP99MsVsEnvoy }))
	return a
}

func invalidAggregate(a KneeRow) KneeRow {
	a.Invalid, a.KneeRPS, a.Censored, a.BoundRPS, a.Confirmed, a.LowestFailRPS, a.ContestedByRPS = true, 0, CensoredNone, 0, false, 0, 0
	for _, f := range []*float64{
		&a.P50MsAtKnee, &a.P99MsAtKnee, &a.CoresPer1kAtKnee, &a.RSSPeakMB, &a.RSSMBAtKnee, &a.KneeVsEnvoy, &a.AddedP99MsVsEnvoy,
		&a.AuditBytesPerReqAtKnee, &a.ProxyDiskWriteBytesPerSAtKnee,
		&a.KneeMedianRPS, &a.KneeMinRPS, &a.KneeMaxRPS, &a.KneeStddevRPS,
	} {
		*f = math.NaN()
	}
	return a
}

func majorityCensoring(rows []KneeRow) string {
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.Censored]++
	}
	for _, c := range []string{CensoredAbove, CensoredBelow} {
		if 2*counts[c] > len(rows) {
			return c
		}
	}
	return CensoredNone
}

// aggregateBound is the bound of the rounds censored like the aggregate, the
// one that holds for all of them: knee >= the lowest top, knee < the highest
// bottom. With the same ladder and floor they are all equal anyway.
func aggregateBound(rows []KneeRow, censored string) int {
	if censored == CensoredNone {
		return 0
	}
	bound := 0
	for _, r := range rows {
		if r.Censored != censored || r.BoundRPS <= 0 {
			continue
		}
		switch {
		case bound == 0,
			censored == CensoredAbove && r.BoundRPS < bound,
			censored == CensoredBelow && r.BoundRPS > bound:
			bound = r.BoundRPS
		}
	}
	return bound
}

// values maps rows to floats, dropping NaN (not available).
func values[T any](rows []T, f func(T) float64) []float64 {
	var out []float64
	for _, r := range rows {
		if v := f(r); !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

func maxOf[T any](rows []T, f func(T) float64) float64 {
	vs := values(rows, f)
	if len(vs) == 0 {
		return math.NaN()
	}
	return slices.Max(vs)
}

// Median of vs, NaN (not measured) left out; NaN when nothing is left.
func Median(vs []float64) float64 {
	s := values(vs, func(v float64) float64 { return v })
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// sampleStddev uses n-1 (rounds are a sample of possible runs); 0 for n < 2.
func sampleStddev(vs []float64) float64 {
	if len(vs) < 2 {
		return 0
	}
	mean := 0.0
	for _, v := range vs {
		mean += v
	}
	mean /= float64(len(vs))
	sum := 0.0
	for _, v := range vs {
		sum += (v - mean) * (v - mean)
	}
	return math.Sqrt(sum / float64(len(vs)-1))
}

func zeroIfNaN(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// lowestBound is the most cautious positive bound among rounds (0: none).
func lowestBound(rounds []KneeRow) int {
	bound := 0
	for _, r := range rounds {
		bound = lowerPositive(bound, r.BoundRPS)
	}
	return bound
}

// lowerPositive is the lower of two rates where 0 stands for "none".
func lowerPositive(a, b int) int {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
