// Package operators answers, for the operators the accelerator decides
// besides @rx compiled by Go's regexp, whether a value matches, exactly as
// Coraza v3.8.1's operator would: the accelerator removes such a rule for a
// transaction only when its operator matches none of the values it sees,
// so a wrong "no" would lose a detection.
//
// Each matcher follows Coraza's operator: the same argument parsing, the
// same library where Coraza uses one (libinjection-go for @detectXSS,
// binaryregexp for binary @rx), and for the phrase operators the compact
// automaton of package phrases, which gives the answers of Coraza's
// Aho-Corasick library (tested there, and here against Coraza itself).
package operators

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/corazawaf/libinjection-go"
	"rsc.io/binaryregexp"

	"github.com/wafsweep/wafsweep/filter/accel/exact"
	"github.com/wafsweep/wafsweep/filter/accel/phrases"
	"github.com/wafsweep/wafsweep/filter/accel/plugin"
)

// Operator is an operator as a rule states it.
type Operator struct {
	// Name in lower case, without "@": "pm", "pmfromfile", "pmf",
	// "detectxss", "validatebyterange" or "rx" (binary expressions).
	Name string
	// Argument as Coraza receives it.
	Argument string
	// Dir is the directory of the rule's file and Root the WAF's root
	// filesystem, where @pmFromFile finds its data file (built once per
	// root marked by plugin.CompactPhrases).
	Dir  string
	Root fs.FS
}

// ErrUndecided is wrapped by New's errors for operators it does not
// decide; the rule then runs as it is.
var ErrUndecided = errors.New("not decided by the accelerator")

// New compiles the operator.
func New(op Operator) (exact.Matcher, error) {
	switch op.Name {
	case "pm":
		return newPhrases(strings.Split(strings.ToLower(op.Argument), " "))
	case "pmfromfile", "pmf":
		// On the accelerated WAF's root, the same matcher as its operator.
		m, err := plugin.PhraseFile(op.Argument, []string{op.Dir}, op.Root)
		if err != nil {
			return nil, fmt.Errorf("@%s %s: %w", op.Name, op.Argument, err)
		}
		return containsMatcher{m}, nil
	case "detectxss":
		return xss{}, nil
	case "validatebyterange":
		return newByteRange(op.Argument)
	case "rx":
		// Coraza compiles binary expressions without its (?sm) prefix.
		re, err := binaryregexp.Compile(op.Argument)
		if err != nil {
			return nil, err
		}
		return re, nil
	}
	return nil, fmt.Errorf("@%s: %w", op.Name, ErrUndecided)
}

// newPhrases matches like @pm: an empty phrase (Coraza's split of a double
// space) would match everywhere, which is not worth deciding.
func newPhrases(list []string) (exact.Matcher, error) {
	m, err := phrases.New(list)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrUndecided)
	}
	return containsMatcher{m}, nil
}

type containsMatcher struct{ m *phrases.Matcher }

func (c containsMatcher) MatchString(value string) bool { return c.m.Contains(value) }

type xss struct{}

func (xss) MatchString(value string) bool { return libinjection.IsXSS(value) }

// byteRange matches a value holding a byte outside the allowed set.
type byteRange struct{ allowed [256]bool }

// newByteRange parses "1-255" or "9,10,32-126": comma-separated bytes and
// inclusive ranges, spaces around each item allowed. An empty argument
// makes Coraza's operator match every value; it is left undecided.
func newByteRange(arg string) (exact.Matcher, error) {
	if arg == "" {
		return nil, fmt.Errorf("@validateByteRange without ranges matches everything: %w", ErrUndecided)
	}
	var r byteRange
	for _, item := range strings.Split(arg, ",") {
		first, last, isRange := strings.Cut(strings.TrimSpace(item), "-")
		lo, err := parseByte(first)
		if err != nil {
			return nil, err
		}
		hi := lo
		if isRange {
			if hi, err = parseByte(last); err != nil {
				return nil, err
			}
		}
		for b := lo; b <= hi; b++ {
			r.allowed[b] = true
		}
	}
	return &r, nil
}

func parseByte(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("@validateByteRange: %w", err)
	}
	if n < 0 || n > 255 {
		return 0, fmt.Errorf("@validateByteRange: %d is not a byte", n)
	}
	return n, nil
}

func (r *byteRange) MatchString(value string) bool {
	for i := 0; i < len(value); i++ {
		if !r.allowed[value[i]] {
			return true
		}
	}
	return false
}
