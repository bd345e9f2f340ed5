package accel

import "slices"

// Removing a transaction's candidates one id at a time fills a map Coraza
// makes for each transaction (over a hundred ids for a benign request
// through full CRS, and the map's growth with them); most of them are
// neighbours in id order, so the same removals fit in a few ranges
// (Coraza's RemoveRuleByIDRange, checked against each rule it evaluates).
// A range is only made over ids that are all removed: between its ends no
// rule of the WAF keeps its place.

// idRanges is every rule id of the built WAF, sorted, and where each
// candidate's id is among them.
type idRanges struct {
	ids       []int   // distinct, ascending
	pos       []int32 // candidate -> index in ids; -1 when its id is not there
	candidate []int   // candidate -> its id
}

func newIDRanges(ruleIDs []int, candidates []int) idRanges {
	ids := slices.Clone(ruleIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	r := idRanges{ids: ids, pos: make([]int32, len(candidates)), candidate: candidates}
	for i, id := range candidates {
		r.pos[i] = -1
		if k, found := slices.BinarySearch(ids, id); found && id > 0 {
			r.pos[i] = int32(k)
		}
	}
	return r
}

// idRangeRemover is the per-transaction range removal of Coraza's
// transaction type.
type idRangeRemover interface{ RemoveRuleByIDRange(start, end int) }

// remove removes the candidates listed (indexes into the candidates) from
// tx: runs of neighbours in id order as one range each, a candidate whose
// id the WAF's list lacks on its own. positions is scratch space, returned
// for reuse.
func (r idRanges) remove(tx idRangeRemover, one remover, removed []int, positions []int32) []int32 {
	positions = positions[:0]
	for _, i := range removed {
		if p := r.pos[i]; p >= 0 {
			positions = append(positions, p)
			continue
		}
		one.RemoveRuleByID(r.candidate[i])
	}
	slices.Sort(positions)
	for start := 0; start < len(positions); {
		end := start
		for end+1 < len(positions) && positions[end+1] == positions[end]+1 {
			end++
		}
		tx.RemoveRuleByIDRange(r.ids[positions[start]], r.ids[positions[end]])
		start = end + 1
	}
	return positions
}
