package multimatch

import (
	"fmt"
	"slices"

	"github.com/wafsweep/wafsweep/filter/accel/literals"
)

// Literal is the pure-Go prefilter: every expression contributes the
// strings one of which each of its matches contains, and one Aho-Corasick
// pass over the case-folded value finds them. Its cost is linear in the
// value whatever the value is, so no input makes it slow.
type Literal struct {
	automaton *literals.Automaton
	filtered  []bool
	// always lists the expressions without strings, reported for every value.
	always []int32
	n      int
}

// NewLiteral derives the strings of each expression (Go syntax, as
// regexp.Compile takes it) and builds the automaton. An empty expression
// is a slot the caller handles otherwise: it is never reported.
func NewLiteral(exprs []string) (*Literal, error) {
	sets := make([][]string, len(exprs))
	l := &Literal{filtered: make([]bool, len(exprs)), n: len(exprs)}
	for i, expr := range exprs {
		if expr == "" {
			continue
		}
		set, ok, err := literals.Required(expr)
		if err != nil {
			return nil, fmt.Errorf("expression %d: %w", i, err)
		}
		if ok {
			sets[i] = set
			l.filtered[i] = true
		} else {
			l.always = append(l.always, int32(i))
		}
	}
	l.automaton = literals.NewAutomaton(sets)
	return l, nil
}

// MayMatch implements Prefilter.
func (l *Literal) MayMatch(value string, hits []int32, scratch []byte) ([]int32, []byte) {
	start := len(hits)
	scratch = literals.AppendFolded(scratch[:0], value)
	l.automaton.Scan(scratch, func(p int32) { hits = append(hits, p) })
	hits = append(hits, l.always...)
	found := hits[start:]
	slices.Sort(found)
	found = slices.Compact(found)
	return hits[:start+len(found)], scratch
}

// Filtered implements Prefilter.
func (l *Literal) Filtered(i int) bool { return l.filtered[i] }

// Name implements Prefilter.
func (l *Literal) Name() string { return "literal" }
