// Package re2rx is the "RE2 per rule" comparison flavor: Coraza with its
// @rx operator replaced by RE2 (github.com/wasilibs/go-re2, pure Go),
// the usual way to make Coraza faster without changing rules.
//
// Coraza looks operators up by name in one process-wide table, so Install
// changes @rx for every WAF built after it in the process (WAFs built
// before keep their operators). It exists for benchmarks; the accelerated
// flavor never replaces @rx.
package re2rx

import (
	"rsc.io/binaryregexp"

	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	re2 "github.com/wasilibs/go-re2"

	"github.com/wafsweep/wafsweep/filter/accel/ruleplan"
)

// Install registers the RE2 @rx for WAFs built from now on.
func Install() {
	plugins.RegisterOperator("rx", newRX)
}

type rx struct{ re *re2.Regexp }

type binaryRX struct{ re *binaryregexp.Regexp }

func newRX(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
	// Coraza's @rx is dot-all and multi-line.
	expr := "(?sm)" + o.Arguments
	if ruleplan.MatchesArbitraryBytes(expr) {
		// Byte patterns: binaryregexp, as Coraza itself does.
		re, err := binaryregexp.Compile(o.Arguments)
		if err != nil {
			return nil, err
		}
		return binaryRX{re}, nil
	}
	re, err := re2.Compile(expr)
	if err != nil {
		return nil, err
	}
	return rx{re}, nil
}

func (o rx) Evaluate(tx plugintypes.TransactionState, value string) bool {
	if !tx.Capturing() {
		return o.re.MatchString(value)
	}
	m := o.re.FindStringSubmatchIndex(value)
	if m == nil {
		return false
	}
	for i := 0; i < len(m)/2 && i < 10; i++ {
		if m[2*i] >= 0 {
			tx.CaptureField(i, value[m[2*i]:m[2*i+1]])
		} else {
			tx.CaptureField(i, "")
		}
	}
	return true
}

func (o binaryRX) Evaluate(tx plugintypes.TransactionState, value string) bool {
	if !tx.Capturing() {
		return o.re.MatchString(value)
	}
	m := o.re.FindStringSubmatch(value)
	for i, c := range m {
		if i == 10 {
			break
		}
		tx.CaptureField(i, c)
	}
	return len(m) > 0
}
