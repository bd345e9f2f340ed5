package accel

import (
	"fmt"
	"strings"

	"github.com/wafsweep/wafsweep/filter/accel/exact"
	"github.com/wafsweep/wafsweep/filter/accel/literals"
	"github.com/wafsweep/wafsweep/filter/accel/multimatch"
)

// Engine is how the candidates' expressions meet the values: either the
// prefilter rules a value out (and a hit is confirmed with Go's regexp),
// or Direct decides value by value.
type Engine struct {
	// Prefilter covers the expressions Direct does not.
	Prefilter multimatch.Prefilter
	// Direct[i], when set, decides expression i exactly.
	Direct []exact.Matcher
}

// EngineFactory compiles an Engine for a list of Go expressions.
type EngineFactory func(exprs []string) (Engine, error)

// PureGoEngine runs everywhere: the literal prefilter for expressions
// that need some rare text, and for those that need only a common
// character or none, which a literal prefilter would pass for nearly
// every value, a matcher per value (exact.NewDirect): RE2 (go-re2, pure
// Go) for the big ones (CRS's evasion-tolerant RCE expressions, 932230
// and family), Go's regexp for small ones such as 920290's "^$". Empty
// expressions are slots it leaves alone.
func PureGoEngine(exprs []string) (Engine, error) {
	e := Engine{Direct: make([]exact.Matcher, len(exprs))}
	prefiltered := make([]string, len(exprs))
	for i, expr := range exprs {
		if expr == "" {
			continue
		}
		set, ok, err := literals.Required(expr)
		if err != nil {
			return Engine{}, err
		}
		if ok && !common(set) {
			prefiltered[i] = expr
			continue
		}
		if e.Direct[i], err = exact.NewDirect(expr); err != nil {
			return Engine{}, fmt.Errorf("expression %d: %w", i, err)
		}
	}
	var err error
	if e.Prefilter, err = multimatch.NewLiteral(prefiltered); err != nil {
		return Engine{}, err
	}
	return e, nil
}

// commonBytes occur in most benign values: a requirement satisfied by one
// of them alone rules out almost nothing.
const commonBytes = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t\r\n.,:/-_()'\"&+="

// common reports whether a required set holds a single common byte.
func common(set []string) bool {
	for _, s := range set {
		if len(s) == 1 && strings.Contains(commonBytes, s) {
			return true
		}
	}
	return false
}
