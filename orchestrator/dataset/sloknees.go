package dataset

import (
	"fmt"
	"math"
	"slices"

	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// SLOKneeRow is a line of slo_knees.csv: the highest rate at which one
// configuration meets one p99 objective in one round, with what it costs
// there; with Round == AllRounds, the median over the rounds that decided
// it (see SLOSearches for how each is found).
type SLOKneeRow struct {
	SweepID  string
	Round    int
	Rounds   int // rounds behind an aggregate row
	ConfigID string
	Flavor   string
	Tier     string
	Shape    string
	SLOMs    float64
	KneeRPS  int // 0 when the objective is not met even at the floor
	Status   string
	// At the knee rate: the last passing step there within the objective.
	P99Ms, CoresPer1k, RSSMB float64
	// CallsAtKnee is how many calls that step's window completed: the
	// sample its p99 is read from. Under ThinP99Calls a few slow calls
	// decide whether the rate meets the objective. On aggregate rows it is
	// the fewest of the rounds'.
	CallsAtKnee int64
	// AddedP99MsVsEnvoy is p99 at the knee minus vanilla Envoy's at the
	// same rate in the same round (see KindBaseline).
	AddedP99MsVsEnvoy      float64
	KneeMinRPS, KneeMaxRPS float64 // over rounds, on aggregate rows
	// Transport is how the load reached the proxy (the steps').
	Transport plan.Transport
}

type skr = SLOKneeRow

var sloKneeSchema = slices.Concat(schema[SLOKneeRow]{
	strCol("sweep_id", func(r *skr) *string { return &r.SweepID }),
	roundCol("round", func(r *skr) *int { return &r.Round }),
	intCol("rounds", func(r *skr) *int { return &r.Rounds }),
	strCol("config_id", func(r *skr) *string { return &r.ConfigID }),
	strCol("flavor", func(r *skr) *string { return &r.Flavor }),
	strCol("tier", func(r *skr) *string { return &r.Tier }),
	strCol("shape", func(r *skr) *string { return &r.Shape }),
	floatCol("slo_p99_ms", func(r *skr) *float64 { return &r.SLOMs }),
	intCol("knee_rps", func(r *skr) *int { return &r.KneeRPS }),
	strCol("status", func(r *skr) *string { return &r.Status }),
	floatCol("p99_ms_at_knee", func(r *skr) *float64 { return &r.P99Ms }),
	int64Col("calls_at_knee", func(r *skr) *int64 { return &r.CallsAtKnee }),
	floatCol("cores_per_1k_at_knee", func(r *skr) *float64 { return &r.CoresPer1k }),
	floatCol("rss_mb_at_knee", func(r *skr) *float64 { return &r.RSSMB }),
	floatCol("added_p99_ms_vs_envoy", func(r *skr) *float64 { return &r.AddedP99MsVsEnvoy }),
	floatCol("knee_min_rps", func(r *skr) *float64 { return &r.KneeMinRPS }),
	floatCol("knee_max_rps", func(r *skr) *float64 { return &r.KneeMaxRPS }),
}, transportCols(func(r *skr) *plan.Transport { return &r.Transport }))

// BuildSLOKnees derives slo_knees.csv from steps.csv, replaying every
// (round, config)'s capacity search and then its SLO searches exactly as
// the sweep ran them.
func BuildSLOKnees(steps []StepRow, ladder []int, opts knee.Options, objectives Objectives) ([]SLOKneeRow, error) {
	if len(objectives.Ms) == 0 {
		return nil, nil
	}
	order, searches := groupSearches(steps)
	var rows []SLOKneeRow
	for _, key := range order {
		all := searches[key]
		capacity, err := knee.Replay(ladder, opts, kneeSteps(CapacitySteps(all)))
		if err != nil {
			return nil, fmt.Errorf("build slo knees: round %d, config %s: %w", key.round, key.configID, err)
		}
		results, pending, err := SLOSearches(all, capacity.Result(), objectives, opts)
		if err != nil {
			return nil, fmt.Errorf("build slo knees: round %d, config %s: %w", key.round, key.configID, err)
		}
		if pending != nil {
			results = append(results, SLOResult{SLOMs: pending.SLOMs, Status: SLOUnfinished})
		}
		envoy := searchSteps(steps, key.round, plan.Config{Flavor: plan.FlavorEnvoy, Tier: plan.TierNone, Shape: all[0].Shape}.ID())
		for _, res := range results {
			row := sloRoundRow(all, res)
			if at, ok := lastPassAt(envoy, row.KneeRPS, 0); ok && row.Flavor != plan.FlavorEnvoy {
				row.AddedP99MsVsEnvoy = row.P99Ms - at.P99Ms
			}
			rows = append(rows, row)
		}
	}
	return withSLOAggregates(rows), nil
}

func sloRoundRow(rows []StepRow, res SLOResult) SLOKneeRow {
	first := rows[0]
	out := SLOKneeRow{SweepID: first.SweepID, Round: first.Round, Rounds: 1, ConfigID: first.ConfigID,
		Flavor: first.Flavor, Tier: first.Tier, Shape: first.Shape, Transport: first.Transport, SLOMs: res.SLOMs, KneeRPS: res.KneeRPS, Status: res.Status,
		P99Ms: math.NaN(), CoresPer1k: math.NaN(), RSSMB: math.NaN(), AddedP99MsVsEnvoy: math.NaN(),
		KneeMinRPS: math.NaN(), KneeMaxRPS: math.NaN()}
	if res.KneeRPS == 0 {
		return out
	}
	if r, ok := lastPassAt(rows, res.KneeRPS, res.SLOMs); ok {
		out.P99Ms, out.CoresPer1k, out.RSSMB, out.CallsAtKnee = r.P99Ms, r.CoresPer1k, r.ProxyRSSPeakMB, r.Completed
	}
	return out
}

// withSLOAggregates appends, per (config, objective), the median over the
// rounds whose search decided it (searched or at its bound; a knee of 0,
// below the floor, counts as decided too), contested when a round is.
func withSLOAggregates(rows []SLOKneeRow) []SLOKneeRow {
	type key struct {
		config string
		slo    float64
	}
	var order []key
	groups := map[key][]SLOKneeRow{}
	for _, r := range rows {
		k := key{r.ConfigID, r.SLOMs}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := append([]SLOKneeRow(nil), rows...)
	for _, k := range order {
		out = append(out, sloAggregate(groups[k]))
	}
	return out
}

func sloAggregate(rounds []SLOKneeRow) SLOKneeRow {
	a := rounds[0]
	a.Round = AllRounds
	var decided []SLOKneeRow
	for _, r := range rounds {
		switch r.Status {
		case SLOSearched, SLOAtBound, SLOContested, SLOBelowFloor:
			decided = append(decided, r)
		}
	}
	a.Rounds = len(decided)
	if len(decided) == 0 {
		a.KneeRPS, a.Status, a.CallsAtKnee = 0, rounds[0].Status, 0
		a.P99Ms, a.CoresPer1k, a.RSSMB, a.AddedP99MsVsEnvoy = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		return a
	}
	knees := values(decided, func(r SLOKneeRow) float64 { return float64(r.KneeRPS) })
	a.KneeRPS = int(math.Round(Median(knees)))
	a.Status = decided[0].Status
	if slices.ContainsFunc(decided, func(r SLOKneeRow) bool { return r.Status == SLOContested }) {
		a.Status = SLOContested // a median that a contested round moves is contested too
	}
	a.KneeMinRPS, a.KneeMaxRPS = slices.Min(knees), slices.Max(knees)
	a.CallsAtKnee = FewestCalls(decided)
	a.P99Ms = Median(values(decided, func(r SLOKneeRow) float64 { return r.P99Ms }))
	a.CoresPer1k = Median(values(decided, func(r SLOKneeRow) float64 { return r.CoresPer1k }))
	a.RSSMB = Median(values(decided, func(r SLOKneeRow) float64 { return r.RSSMB }))
	a.AddedP99MsVsEnvoy = Median(values(decided, func(r SLOKneeRow) float64 { return r.AddedP99MsVsEnvoy }))
	return a
}

// ThinP99Calls is the sample under which a p99 is thin: its 1% tail is
// fewer than 10 calls, so one or two slow calls move it past an objective.
// A 20 s window holds fewer below 50 RPS.
const ThinP99Calls = 1000

// ThinP99 reports whether r's rate was met on a p99 read from fewer than
// ThinP99Calls calls.
func (r SLOKneeRow) ThinP99() bool {
	return r.KneeRPS > 0 && r.CallsAtKnee > 0 && r.CallsAtKnee < ThinP99Calls
}

// FewestCalls is the smallest CallsAtKnee of the rows that met their
// objective, 0 when none did.
func FewestCalls(rows []SLOKneeRow) int64 {
	var fewest int64
	for _, r := range rows {
		if r.KneeRPS > 0 && r.CallsAtKnee > 0 && (fewest == 0 || r.CallsAtKnee < fewest) {
			fewest = r.CallsAtKnee
		}
	}
	return fewest
}

// WriteSLOKnees replaces path with the rows, atomically.
func WriteSLOKnees(path string, rows []SLOKneeRow) error {
	return writeCSVFile(path, sloKneeSchema, rows)
}

// ReadSLOKnees reads slo_knees.csv, checking the header and naming bad lines.
func ReadSLOKnees(path string) ([]SLOKneeRow, error) {
	return readCSVFile(path, sloKneeSchema)
}
