package dataset

import (
	"slices"

	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// KindBaseline marks a step of vanilla Envoy run at a rate another flavor
// reported (its knee, an SLO knee), outside any search, so that the added
// latency of every reported row compares equal rates.
const KindBaseline = "baseline"

// BaselineRates lists, ascending, the rates that the WAF configurations of
// one round and shape report (capacity knees and SLO knees) at which the
// round's vanilla Envoy has no valid step yet.
func BaselineRates(steps []StepRow, round int, shape string, ladder []int, opts knee.Options, objectives Objectives) ([]int, error) {
	order, searches := groupSearches(steps)
	envoyID := plan.Config{Flavor: plan.FlavorEnvoy, Tier: plan.TierNone, Shape: shape}.ID()
	var rates []int
	for _, key := range order {
		rows := searches[key]
		if key.round != round || rows[0].Shape != shape || !plan.HasWAF(rows[0].Flavor) {
			continue
		}
		reported, err := reportedRates(rows, ladder, opts, objectives)
		if err != nil {
			return nil, err
		}
		rates = append(rates, reported...)
	}
	envoySteps := searches[searchKey{round, envoyID}]
	rates = slices.DeleteFunc(rates, func(rate int) bool { return hasValidStepAt(envoySteps, rate) })
	slices.Sort(rates)
	return slices.Compact(rates), nil
}

// reportedRates are the rates one search's rows are reported at.
func reportedRates(rows []StepRow, ladder []int, opts knee.Options, objectives Objectives) ([]int, error) {
	capacity, err := knee.Replay(ladder, opts, kneeSteps(CapacitySteps(rows)))
	if err != nil {
		return nil, err
	}
	var rates []int
	if res := capacity.Result(); res.Done && !res.Invalid && res.Knee > 0 {
		rates = append(rates, res.Knee)
	}
	results, _, err := SLOSearches(rows, capacity.Result(), objectives, opts)
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		if r.KneeRPS > 0 {
			rates = append(rates, r.KneeRPS)
		}
	}
	return rates, nil
}

func hasValidStepAt(rows []StepRow, rate int) bool {
	return slices.ContainsFunc(rows, func(r StepRow) bool { return r.TargetRPS == rate && r.Verdict != VerdictInvalid })
}
