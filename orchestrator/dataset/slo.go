package dataset

import (
	"fmt"
	"slices"

	"github.com/wafsweep/wafsweep/orchestrator/knee"
)

// SLO knees: for each p99 objective, the highest rate at which a
// configuration passes the capacity criteria with its corrected p99 within
// the objective. A platform team plans on these rather than on saturation.
//
// They are searched, not read off the rates the capacity search visited.
// The objectives are taken largest first, each bounded above by the knee of
// the one before (the capacity knee for the largest), since a tighter
// objective cannot be met at a higher rate. When the bounding search's own
// last passing step at that bound already met the objective, the bound is
// the objective's knee (status AtBound). Otherwise a knee search runs with the bound as its one
// ladder rate, descending and bisecting to the plan's resolution like the
// capacity search, on steps that pass only within the objective
// (StepRow.SLOMs, knee.Step.MaxP99Ms).

// SLO knee statuses.
const (
	SLOSearched     = "searched"    // found by its own search
	SLOAtBound      = "at_bound"    // the bound (capacity or a larger objective's knee) met it
	SLOBelowFloor   = "below_floor" // not met even at the search's floor: knee 0
	SLOInvalid      = "invalid"     // its search (or the capacity search) ended invalid
	SLONoCapacity   = "no_capacity" // the capacity search found no knee to bound it
	SLOUnfinished   = "unfinished"  // the sweep stopped before its search ended
	defaultSLOFloor = 10            // RPS, when the plan has no descent floor
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

// SLOSearches replays the SLO searches of one configuration in one round
// from its rows (every search's, in seq order) and the result of its
// capacity search. It returns the objectives decided so far, largest
// first, and the search that wants a step next (nil when all are decided).
// The sweep and the dataset builder both call it, so the searches a resumed
// sweep continues are the ones the dataset shows.
func SLOSearches(rows []StepRow, capacity knee.Result, slos []float64, opts knee.Options) ([]SLOResult, *PendingSLO, error) {
	objectives := slices.Clone(slos)
	slices.Sort(objectives)
	slices.Reverse(objectives)
	bound, status := capacityBound(capacity)
	bounding := boundingSearch{rows: CapacitySteps(rows)}
	var results []SLOResult
	for _, slo := range objectives {
		if status != "" {
			results = append(results, SLOResult{SLOMs: slo, Status: status, Bound: bound})
			continue
		}
		res, pending, err := sloSearch(rows, bounding, slo, bound, opts)
		if err != nil || pending != nil {
			return results, pending, err
		}
		results = append(results, res)
		switch res.Status {
		case SLOInvalid, SLOBelowFloor:
			status = res.Status // every tighter objective shares the outcome
		case SLOSearched:
			bound, bounding = res.KneeRPS, boundingSearch{rows: objectiveSteps(rows, slo), sloMs: slo}
		}
	}
	return results, nil, nil
}

// boundingSearch is the search whose knee bounds an objective: the capacity
// search's rows, or those of the larger objective that was searched. Only
// its own steps at the bound say whether the bound meets the objective: a
// tighter objective's later step at the same rate (a p99 of another run)
// must not undo a decision already taken.
type boundingSearch struct {
	rows  []StepRow
	sloMs float64 // its objective; 0 for the capacity search
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
func sloSearch(rows []StepRow, bounding boundingSearch, slo float64, bound int, opts knee.Options) (SLOResult, *PendingSLO, error) {
	res := SLOResult{SLOMs: slo, Bound: bound}
	own := objectiveSteps(rows, slo)
	if len(own) == 0 {
		// The bounding search's last run at the bound decides, as the
		// capacity knee's does.
		if at, ok := lastPassAt(bounding.rows, bound, bounding.sloMs); ok && at.P99Ms <= slo {
			res.KneeRPS, res.Status = bound, SLOAtBound
			return res, nil, nil
		}
	}
	if bound < 2 {
		res.Status = SLOBelowFloor
		return res, nil, nil
	}
	search, err := knee.Replay([]int{bound}, sloOptions(opts, bound), kneeSteps(own))
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
