package accel

import (
	"cmp"
	"slices"

	"github.com/wafsweep/wafsweep/filter/accel/ruleplan"
)

// Removing a transaction's candidates one id at a time fills a map Coraza
// makes for each transaction (over a hundred ids for a benign request
// through full CRS, and the map's growth with them); most of them are
// neighbours in id order, so the same removals fit in a few ranges
// (Coraza's RemoveRuleByIDRange, checked against each rule it evaluates).
// A range is only made over ids that are all removed: between its ends no
// rule of the WAF keeps its place.

// idRanges is every rule id of the built WAF, sorted, where each
// candidate's id is among them, and each phase's candidates in that order,
// so that a decision walks them once and emits each run as it ends.
type idRanges struct {
	ids   []int   // distinct, ascending; nil until the WAF's ids are known
	pos   []int32 // candidate -> index in ids; -1 when its id is not there
	order [][]int // phase -> its candidates, by pos (those without one last)
}

func newIDRanges(ruleIDs []int, candidates []ruleplan.Candidate) idRanges {
	var ids []int
	if ruleIDs != nil {
		ids = slices.Compact(slices.Sorted(slices.Values(ruleIDs)))
	}
	r := idRanges{ids: ids, pos: make([]int32, len(candidates))}
	for i, c := range candidates {
		r.pos[i] = -1
		if k, found := slices.BinarySearch(ids, c.ID); found && c.ID > 0 {
			r.pos[i] = int32(k)
		}
		for len(r.order) <= c.Phase {
			r.order = append(r.order, nil)
		}
		r.order[c.Phase] = append(r.order[c.Phase], i)
	}
	last := func(p int32) int32 { // no position sorts after every position
		if p < 0 {
			return int32(len(ids))
		}
		return p
	}
	for _, phase := range r.order {
		slices.SortStableFunc(phase, func(a, b int) int { return cmp.Compare(last(r.pos[a]), last(r.pos[b])) })
	}
	return r
}

// idRangeRemover is the per-transaction range removal of Coraza's
// transaction type.
type idRangeRemover interface{ RemoveRuleByIDRange(start, end int) }

// removeInPhase walks phase's candidates in id order and removes those
// removed reports: each run of neighbours in the WAF's ids as one range of
// tx, a candidate whose id the WAF's list lacks (or every one, when the
// ids are not known or tx is nil) on its own through one.
func (r idRanges) removeInPhase(phase int, candidates []ruleplan.Candidate, tx idRangeRemover, one remover, removed func(i int) bool) {
	if phase < 0 || phase >= len(r.order) {
		return
	}
	ranged := tx != nil && r.ids != nil
	var start, end int32
	open := false
	flush := func() {
		if open {
			tx.RemoveRuleByIDRange(r.ids[start], r.ids[end])
			open = false
		}
	}
	for _, i := range r.order[phase] {
		if !removed(i) {
			continue // it keeps its place, and so ends no run: its position does
		}
		switch p := r.pos[i]; {
		case !ranged || p < 0:
			one.RemoveRuleByID(candidates[i].ID)
		case open && p == end+1:
			end = p
		default:
			flush()
			start, end, open = p, p, true
		}
	}
	flush()
}
