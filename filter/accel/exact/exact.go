// Package exact answers "does this Go regular expression match this
// value" with two engines: Go's regexp, which is what Coraza runs (the
// reference), and RE2 through github.com/wasilibs/go-re2 (pure Go), fed
// the expression rewritten from Go's parse tree (package translate) and
// the value with invalid UTF-8 bytes replaced as Go's regexp reads them.
// RE2 runs large alternations as a DFA, tens of times faster than Go's
// backtracker and NFA on CRS's biggest expressions. Go and Confirm
// compile on first use, RE2 at once (its errors belong to the build).
package exact

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"sync"

	re2 "github.com/wasilibs/go-re2"

	"github.com/wafsweep/wafsweep/filter/accel/translate"
)

// Matcher is one compiled expression.
type Matcher interface {
	MatchString(value string) bool
}

// Go is expr compiled by Go's regexp, as Coraza compiles @rx.
type Go struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

// NewGo prepares expr; it must compile (callers checked it).
func NewGo(expr string) *Go { return &Go{expr: expr} }

// MatchString implements Matcher.
func (g *Go) MatchString(value string) bool {
	g.once.Do(func() { g.re = regexp.MustCompile(g.expr) })
	return g.re.MatchString(value)
}

// RE2 is expr translated for RE2.
type RE2 struct {
	re *re2.Regexp
}

// NewRE2 translates and compiles expr.
func NewRE2(expr string) (*RE2, error) {
	tr, err := translate.Translate(expr, translate.RE2)
	if err != nil {
		return nil, err
	}
	re, err := re2.Compile(tr)
	if err != nil {
		return nil, fmt.Errorf("RE2 rejects the translation of %.60q: %w", expr, err)
	}
	return &RE2{re: re}, nil
}

// MatchString implements Matcher.
func (r *RE2) MatchString(value string) bool {
	return r.re.MatchString(translate.Sanitize(value))
}

// smallProgram is the size, in instructions of Go's compiled program, up
// to which Go's regexp beats a call into RE2: a wasm call and a copy of
// the value cost more than a backtracker over a few dozen instructions.
const smallProgram = 64

// NewDirect prepares expr to be run on every value: Go's regexp, which is
// Coraza's own answer, when its program is small; RE2 otherwise.
func NewDirect(expr string) (Matcher, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, err
	}
	if len(prog.Inst) <= smallProgram {
		return NewGo(expr), nil
	}
	return NewRE2(expr)
}

// Confirm answers for a prefilter hit: RE2 when the expression translates,
// compiled on first use, else Go's regexp.
type Confirm struct {
	expr    string
	once    sync.Once
	matcher Matcher
}

// NewConfirm prepares expr.
func NewConfirm(expr string) *Confirm { return &Confirm{expr: expr} }

// MatchString implements Matcher.
func (c *Confirm) MatchString(value string) bool {
	c.once.Do(func() {
		if m, err := NewRE2(c.expr); err == nil {
			c.matcher = m
		} else {
			c.matcher = NewGo(c.expr)
		}
	})
	return c.matcher.MatchString(value)
}
