package dataset

import (
	"fmt"
	"slices"

	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// SLO knees: for each p99 objective, the highest rate at which a
// configuration passes the capacity criteria with its corrected p99 within
// the objective. A platform team plans on these rather than on saturation.
//
// They are searched, not read off the rates the capacity search visited.
// The objectives are taken largest first, each bounded above by the knee of
// the one before (the capacity knee for the largest), since a tighter
// objective cannot be met at a higher rate. When the runs already made at
// the bound meet the objective, the bound is its knee (status AtBound);
// which runs count is the plan's SLORule:
//
//   - plan.SLOEveryRun: every valid run at the bound in the capacity search
//     and in the larger objectives' searches. Near the capacity knee a
//     proxy's p99 moves a lot from run to run (7, 8, 35, 159 and 232 ms in
//     five passing runs at one rate), so one run over the objective there
//     makes the bound a failure. In the search that follows, a rate where
//     one of those earlier runs failed the objective is answered by that
//     run rather than measured again: the knee is a rate that no run of
//     the round, up to that decision, failed.
//   - plan.SLOLastRun (sweeps before the rule): the bounding search's last
//     passing run at the bound. An at_bound knee it decides although
//     another of those runs was over the objective has status Contested.
//
// Otherwise a knee search runs with the bound as its one ladder rate,
// descending and bisecting to the plan's resolution like the capacity
// search, on steps that pass only within the objective (StepRow.SLOMs,
// knee.Step.MaxP99Ms). Only runs made before an objective's decision count
// for it (a tighter objective's later runs at the same rate do not), so a
// resumed sweep replays every decision as it was taken.

// SLO knee statuses.
const (
	SLOSearched     = "searched"           // found by its own search
	SLOAtBound      = "at_bound"           // the bound (capacity or a larger objective's knee) met it
	SLOContested    = "at_bound_contested" // at_bound by SLOLastRun only: another run at the bound was over
	SLOBelowFloor   = "below_floor"        // not met even at the search's floor: knee 0
	SLOInvalid      = "invalid"            // its search (or the capacity search) ended invalid
	SLONoCapacity   = "no_capacity"        // the capacity search found no knee to bound it
	SLOUnfinished   = "unfinished"         // the sweep stopped before its search ended
	defaultSLOFloor = 10                   // RPS, when the plan has no descent floor
)

// SLOResult is one objective's outcome for one configuration in one round.
type SLOResult struct {
	SLOMs   float64
	KneeRPS int
	Status  string
	// Bound is the rate that bounded the search above.
	Bound int
}

// PendingSLO is an objective whose search wants another step.
type PendingSLO struct {
	SLOMs  float64
	Search *knee.Search
}

// Objectives are the SLO searches a plan asks for: its p99 objectives in
// milliseconds and the rule that decides one met at its bound.
type Objectives struct {
	Ms   []float64
	Rule plan.SLORule
}

// ObjectivesOf are p's.
func ObjectivesOf(p plan.Plan) Objectives {
	return Objectives{Ms: p.SLOMs(), Rule: p.SLORule}
}

// SLOSearches replays the SLO searches of one configuration in one round
// from its rows (every search's, in seq order) and the result of its
// capacity search. It returns the objectives decided so far, largest
// first, and the search that wants a step next (nil when all are decided).
// The sweep and the dataset builder both call it, so the searches a resumed
// sweep continues are the ones the dataset shows.
func SLOSearches(rows []StepRow, capacity knee.Result, objectives Objectives, opts knee.Options) ([]SLOResult, *PendingSLO, error) {
	slos := slices.Clone(objectives.Ms)
	slices.Sort(slos)
	slices.Reverse(slos)
	bound, status := capacityBound(capacity)
	bounding := boundingSearch{rows: CapacitySteps(rows)}
	earlier := bounding.rows // the runs made before the next objective's decision
	var results []SLOResult
	for _, slo := range slos {
		if status != "" {
			results = append(results, SLOResult{SLOMs: slo, Status: status, Bound: bound})
			continue
		}
		atBound := atBoundEvidence{rule: objectives.Rule, bounding: bounding, earlier: earlier}
		res, pending, err := sloSearch(rows, atBound, slo, bound, opts)
		if err != nil || pending != nil {
			return results, pending, err
		}
		results = append(results, res)
		own := objectiveSteps(rows, slo)
		earlier = append(slices.Clip(earlier), own...)
		switch res.Status {
		case SLOInvalid, SLOBelowFloor:
			status = res.Status // every tighter objective shares the outcome
		case SLOSearched:
			bound, bounding = res.KneeRPS, boundingSearch{rows: own, sloMs: slo}
		}
	}
	return results, nil, nil
}

// boundingSearch is the search whose knee bounds an objective: the capacity
// search's rows, or those of the larger objective that was searched.
type boundingSearch struct {
	rows  []StepRow
	sloMs float64 // its objective; 0 for the capacity search
}

// atBoundEvidence is what decides whether an objective is met at its
// bound: under SLOEveryRun every earlier run there, under SLOLastRun the
// bounding search's last passing one.
type atBoundEvidence struct {
	rule     plan.SLORule
	bounding boundingSearch
	earlier  []StepRow // the capacity search's and the larger objectives' runs
}

// capacityBound is the capacity knee that bounds the largest objective, or
// why there is none.
func capacityBound(c knee.Result) (int, string) {
	switch {
	case !c.Done:
		return 0, SLOUnfinished
	case c.Invalid:
		return 0, SLOInvalid
	case c.CensoredAbove:
		return c.Bound, ""
	case c.CensoredBelow || c.Knee <= 0:
		return 0, SLONoCapacity
	}
	return c.Knee, ""
}

// sloSearch decides one objective under bound, or returns its search when
// it wants a step.
func sloSearch(rows []StepRow, atBound atBoundEvidence, slo float64, bound int, opts knee.Options) (SLOResult, *PendingSLO, error) {
	res := SLOResult{SLOMs: slo, Bound: bound}
	own := objectiveSteps(rows, slo)
	_, anyOver := firstOverAt(atBound.earlier, bound, slo)
	var earlier []StepRow // runs whose failures answer the search's steps
	switch atBound.rule {
	case plan.SLOEveryRun:
		if !anyOver && hasValidStepAt(atBound.earlier, bound) {
			res.KneeRPS, res.Status = bound, SLOAtBound
			return res, nil, nil
		}
		earlier = atBound.earlier
	default: // plan.SLOLastRun: the sweep searched only when the last run said so
		if len(own) == 0 {
			if at, ok := lastPassAt(atBound.bounding.rows, bound, atBound.bounding.sloMs); ok && at.P99Ms <= slo {
				res.KneeRPS, res.Status = bound, SLOAtBound
				if anyOver {
					res.Status = SLOContested
				}
				return res, nil, nil
			}
		}
	}
	if bound < 2 {
		res.Status = SLOBelowFloor
		return res, nil, nil
	}
	search, err := replaySLOSearch(bound, sloOptions(opts, bound), slo, own, earlier)
	if err != nil {
		return res, nil, fmt.Errorf("the p99 <= %g ms search does not replay: %w", slo, err)
	}
	if _, _, done := search.Next(); !done {
		return res, &PendingSLO{SLOMs: slo, Search: search}, nil
	}
	r := search.Result()
	switch {
	case r.Invalid:
		res.Status = SLOInvalid
	case r.CensoredAbove:
		res.KneeRPS, res.Status = bound, SLOSearched
	case r.CensoredBelow:
		res.Status = SLOBelowFloor
	default:
		res.KneeRPS, res.Status = r.Knee, SLOSearched
	}
	return res, nil, nil
}

// replaySLOSearch rebuilds an objective's search from its own steps. A
// rate the search asks for where one of the earlier runs failed the
// objective is answered by that run instead of being measured again (the
// search then never asks for it again, since it only goes lower), so the
// knee it finds is a rate no run of the round's searches so far failed.
// It fails, like knee.Replay, when the own steps are not what the search
// asks for.
func replaySLOSearch(bound int, opts knee.Options, slo float64, own, earlier []StepRow) (*knee.Search, error) {
	search, err := knee.NewSearch([]int{bound}, opts)
	if err != nil {
		return nil, err
	}
	steps := kneeSteps(own)
	for {
		rate, _, done := search.Next()
		var step knee.Step
		if over, ok := firstOverAt(earlier, rate, slo); ok && !done {
			step = over
		} else if len(steps) > 0 {
			step, steps = steps[0], steps[1:]
		} else {
			return search, nil
		}
		if err := search.Record(step); err != nil {
			return nil, err
		}
	}
}

// firstOverAt is the first valid run at rate that fails as a step of the
// objective (its p99 over it, or the capacity criteria failed), as that
// objective's step.
func firstOverAt(rows []StepRow, rate int, slo float64) (knee.Step, bool) {
	for _, r := range rows {
		st := r.KneeStep()
		st.MaxP99Ms = slo
		if r.TargetRPS == rate && !st.Invalid && !st.Passed() {
			return st, true
		}
	}
	return knee.Step{}, false
}

// sloOptions are the capacity search's options with a floor below the
// bound, so that the search can descend from it.
func sloOptions(opts knee.Options, bound int) knee.Options {
	floor := opts.Floor
	if floor <= 0 {
		floor = defaultSLOFloor
	}
	opts.Floor = max(1, min(floor, bound-1))
	return opts
}

func objectiveSteps(rows []StepRow, slo float64) []StepRow {
	var out []StepRow
	for _, r := range rows {
		if r.SLOMs == slo {
			out = append(out, r)
		}
	}
	return out
}
