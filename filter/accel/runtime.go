package accel

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/corazawaf/coraza/v3/types"

	"github.com/wafsweep/wafsweep/filter/accel/multimatch"
)

// runtime is the per-transaction half of the Accelerator.
type runtime struct {
	a      *Accelerator
	states sync.Map // transaction -> *txState
	pool   sync.Pool

	removed       atomic.Uint64
	kept          atomic.Uint64
	fallbacks     atomic.Uint64
	disagreements atomic.Uint64
	warnOnce      sync.Once
}

// Stats are the accelerator's counters since it was built.
type Stats struct {
	// Removed and Kept count candidate decisions (in shadow mode,
	// Removed counts the removals it would have made).
	Removed, Kept uint64
	// Fallbacks counts transactions evaluated exactly because removal
	// was not possible.
	Fallbacks uint64
	// Disagreements counts shadow decisions the exact evaluation
	// contradicted, and prefilter misses shadow mode found.
	Disagreements uint64
}

// Stats reports the counters.
func (a *Accelerator) Stats() Stats {
	return Stats{Removed: a.removed.Load(), Kept: a.kept.Load(), Fallbacks: a.fallbacks.Load(), Disagreements: a.disagreements.Load()}
}

// txState is what one transaction has collected so far.
type txState struct {
	level int // detection paranoia level in force
	// matched holds candidates whose expression matched a collected value.
	matched multimatch.Bitset
	// memo keeps each distinct value's prefilter hits: many chains leave
	// most values unchanged, so one scan serves all of them.
	memo    map[string]memoEntry
	hits    []int32
	scratch []byte
	// wouldRemove lists, in shadow mode, the candidates a decision removed.
	wouldRemove   []int
	disagreements int
}

// memoEntry is one value's prefilter hits, st.hits[lo:hi], and the
// collectors (the first 64) that have already decided their candidates on
// it: Collect is a function of the collector and the value alone, so a
// value a collector sees again (REQUEST_URI and REQUEST_FILENAME are often
// the same text, and so are many values after a chain that changes
// nothing) can set no bit the first call did not.
type memoEntry struct {
	lo, hi int32
	done   uint64
}

// doneBit is collector's bit in memoEntry.done, 0 past the first 64.
func doneBit(collector int) uint64 {
	if collector >= 64 {
		return 0
	}
	return 1 << collector
}

func (r *runtime) init(a *Accelerator) {
	r.a = a
	r.pool.New = func() any {
		return &txState{matched: multimatch.NewBitset(len(a.candidates)), memo: map[string]memoEntry{}}
	}
}

// state returns the transaction's state, creating it on first use.
func (r *runtime) state(tx plugintypes.TransactionState) *txState {
	if st, ok := r.states.Load(tx); ok {
		return st.(*txState)
	}
	st := r.pool.Get().(*txState)
	st.level = paranoiaLevel(tx)
	r.states.Store(tx, st)
	return st
}

func (r *runtime) release(st *txState) {
	st.matched.Clear()
	clear(st.memo)
	st.hits = st.hits[:0]
	st.wouldRemove = st.wouldRemove[:0]
	st.disagreements = 0
	r.pool.Put(st)
}

// paranoiaLevel reads CRS's tx.detection_paranoia_level; without it every
// candidate is in force.
func paranoiaLevel(tx plugintypes.TransactionState) int {
	if v := tx.Variables().TX().Get("detection_paranoia_level"); len(v) > 0 {
		if n, err := strconv.Atoi(v[0]); err == nil {
			return n
		}
	}
	return 1 << 30
}

// inForce reports whether candidate i runs at this paranoia level: rules
// of higher levels are skipped by CRS itself, so nothing is gained by
// deciding about them (and nothing is lost by leaving them alone).
func (a *Accelerator) inForce(i, level int) bool {
	return a.included.Has(i) && a.candidates[i].Paranoia <= level
}

// Collect implements plugin.Handler.
func (a *Accelerator) Collect(tx plugintypes.TransactionState, collector int, value string) {
	if a.observe != nil {
		a.observe(tx, collector, value)
	}
	st := a.state(tx)
	m, ok := st.memo[value]
	bit := doneBit(collector)
	if ok && m.done&bit != 0 {
		return
	}
	if !ok {
		lo := int32(len(st.hits))
		st.hits, st.scratch = a.engine.Prefilter.MayMatch(value, st.hits, st.scratch)
		m = memoEntry{lo: lo, hi: int32(len(st.hits))}
	}
	if !ok || bit != 0 { // a collector past the first 64 changes nothing to keep
		m.done |= bit
		st.memo[value] = m
	}
	hits := st.hits[m.lo:m.hi]
	for _, h := range hits {
		i := int(h)
		if a.collectorOf[i] != collector || len(value) < a.minLen[i] || st.matched.Has(i) || !a.inForce(i, st.level) {
			continue
		}
		if a.confirm[i].MatchString(value) {
			st.matched.Set(i)
		}
	}
	for _, i := range a.collectors[collector].direct {
		if len(value) < a.minLen[i] || st.matched.Has(i) || !a.inForce(i, st.level) {
			continue
		}
		if a.engine.Direct[i].MatchString(value) {
			st.matched.Set(i)
		}
	}
	if a.mode == Shadow {
		a.shadowCollect(tx, st, collector, value)
	}
}

// shadowCollect checks the matcher itself: every expression it said does
// not match this value is run with Coraza's own engine; a match there is a
// miss of the matcher (prefilter, RE2 confirm or direct RE2 alike).
func (a *Accelerator) shadowCollect(tx plugintypes.TransactionState, st *txState, collector int, value string) {
	for _, i := range a.collectors[collector].candidates {
		if st.matched.Has(i) || !a.inForce(i, st.level) || a.reference[i] == nil {
			// Without a Go expression, Direct is the operator itself,
			// exact by construction; the phase-5 check still compares
			// the decision with what Coraza's operator did.
			continue
		}
		if a.reference[i].MatchString(value) {
			st.matched.Set(i)
			st.disagreements++
			a.disagreements.Add(1)
			a.log.Warn(fmt.Sprintf("[corazawaf] acceleration disagreement in transaction %s: the matcher ruled out rule %d, whose expression matches a value of %d bytes",
				tx.ID(), a.candidates[i].ID, len(value)))
		}
	}
}

// remover is the undocumented per-transaction removal of Coraza's
// transaction type.
type remover interface{ RemoveRuleByID(id int) }

// rangeRemover lists the transaction's ctl:ruleRemoveById ranges.
type rangeRemover interface{ GetRuleRemoveByIDRanges() [][2]int }

// Decide implements plugin.Handler: it decides the candidates of a phase.
func (a *Accelerator) Decide(tx plugintypes.TransactionState, phase int) {
	st := a.state(tx)
	rm, ok := tx.(remover)
	if !ok {
		a.fallbacks.Add(1)
		a.warnOnce.Do(func() {
			a.log.Warn(fmt.Sprintf("[corazawaf] acceleration off: Coraza's transaction (%T) has no RemoveRuleByID, every rule is evaluated", tx))
		})
		a.forget(tx, st)
		return
	}
	if generatedRulesRemoved(tx) {
		// Some collectors may not have run: what they did not see
		// cannot be decided on.
		a.fallbacks.Add(1)
		a.forget(tx, st)
		return
	}
	decide := func(i int) bool {
		if !a.inForce(i, st.level) {
			return false
		}
		if st.matched.Has(i) {
			a.kept.Add(1)
			return false
		}
		a.removed.Add(1)
		if a.mode == Shadow {
			st.wouldRemove = append(st.wouldRemove, a.candidates[i].ID)
			return false
		}
		return true
	}
	rr, _ := tx.(idRangeRemover)
	a.ranges.removeInPhase(phase, a.candidates, rr, rm, decide)
	if a.mode != Shadow {
		a.forget(tx, st)
	}
}

// generatedRulesRemoved reports a ctl:ruleRemoveById range over the
// generated rules' ids.
func generatedRulesRemoved(tx plugintypes.TransactionState) bool {
	rr, ok := tx.(rangeRemover)
	if !ok {
		return false
	}
	for _, r := range rr.GetRuleRemoveByIDRanges() {
		if r[0] <= lastRuleID && r[1] >= FirstRuleID {
			return true
		}
	}
	return false
}

// matchedRules is how the shadow check learns which rules matched.
type matchedRules interface{ MatchedRules() []types.MatchedRule }

// Check implements plugin.Handler: in shadow mode, a rule the decision
// would have removed but that matched is a disagreement.
func (a *Accelerator) Check(tx plugintypes.TransactionState) {
	v, ok := a.states.Load(tx)
	if !ok {
		return
	}
	st := v.(*txState)
	mr, ok := tx.(matchedRules)
	if !ok || len(st.wouldRemove) == 0 {
		return
	}
	for _, m := range mr.MatchedRules() {
		id := m.Rule().ID()
		for _, w := range st.wouldRemove {
			if w == id {
				st.disagreements++
				a.disagreements.Add(1)
				a.log.Warn(fmt.Sprintf("[corazawaf] acceleration disagreement in transaction %s: rule %d would have been removed but matched", tx.ID(), id))
			}
		}
	}
}

// Tracked counts the transactions the accelerator holds state for: those
// between a phase's first generated rule and its decision, or Finish.
func (a *Accelerator) Tracked() int {
	n := 0
	a.states.Range(func(any, any) bool { n++; return true })
	return n
}

// forget drops a transaction's state.
func (a *Accelerator) forget(tx any, st *txState) {
	a.states.Delete(tx)
	a.release(st)
}

// Finish ends a transaction (after its logging phase) and returns the
// disagreements shadow mode found in it. It must be called with the
// transaction Coraza created (types.Transaction).
func (a *Accelerator) Finish(tx any) (disagreements int) {
	v, ok := a.states.LoadAndDelete(tx)
	if !ok {
		return 0
	}
	st := v.(*txState)
	n := st.disagreements
	a.release(st)
	return n
}
