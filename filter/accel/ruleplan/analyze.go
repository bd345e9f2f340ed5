// Package ruleplan decides which rules of a parsed rule set the
// accelerator may leave out: for every transaction, the rules whose
// outcome is the same in all of them (Constant), and per transaction, the
// candidates (Analyze), grouped by what they see.
//
// A candidate is a phase-1 or phase-2 rule whose only work before its
// first match is one operator the accelerator can decide (see decidable)
// over request data that no rule of its phase can change: if the operator cannot
// match any value the rule sees, the rule cannot match, runs none of its
// actions, and removing it for that transaction changes nothing, unless
// removal itself is observable. Coraza does not count removed rules against
// skip:N, so rules a skip could reach stay out; so do rules whose targets or
// actions another directive changes.
package ruleplan

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/wafsweep/wafsweep/filter/accel/seclang"
)

// Candidate is a rule the accelerator may remove for a transaction.
type Candidate struct {
	ID int
	// Phase is 1 or 2: the phase whose collectors and decider serve it.
	Phase int
	// Operator is the operator's name in lower case ("rx", "pm", ...) and
	// Argument its argument as Coraza receives it.
	Operator, Argument string
	// Expr is the Go expression Coraza compiles for an @rx it matches with
	// package regexp: "(?sm)" + Argument. It is empty for other operators,
	// binary @rx included (Coraza compiles those with binaryregexp).
	Expr string
	// Dir is the directory of the rule's file, where Coraza looks for the
	// data files of @pmFromFile.
	Dir string
	// Targets is the rule's target list as written.
	Targets string
	// Transformations after t:none, in order.
	Transformations []string
	MultiMatch      bool
	// Paranoia is the rule's paranoia-level/N tag, 0 when it has none.
	Paranoia int
}

// Exclusion is a rule that looks like a candidate but is kept, and why.
type Exclusion struct {
	ID     int
	Reason string
}

// Plan is the outcome of the analysis.
type Plan struct {
	Candidates []Candidate
	Excluded   []Exclusion
}

// fixedInPhase1 are the collections whose values are settled before the
// first phase-1 rule runs and that no rule action changes. ARGS is
// ARGS_GET until the body is read, after phase 1.
var fixedInPhase1 = map[string]bool{
	"ARGS": true, "ARGS_NAMES": true, "ARGS_GET": true, "ARGS_GET_NAMES": true,
	"REQUEST_COOKIES": true, "REQUEST_COOKIES_NAMES": true,
	"REQUEST_HEADERS": true, "REQUEST_HEADERS_NAMES": true,
	"REQUEST_URI": true, "REQUEST_URI_RAW": true, "REQUEST_FILENAME": true,
	"REQUEST_BASENAME": true, "REQUEST_LINE": true, "QUERY_STRING": true,
	"REQUEST_METHOD": true, "REQUEST_PROTOCOL": true,
}

// fixedInPhase2 are the collections whose values are settled before the
// first phase-2 rule runs and that no rule action changes.
var fixedInPhase2 = map[string]bool{
	"ARGS": true, "ARGS_NAMES": true, "ARGS_GET": true, "ARGS_GET_NAMES": true,
	"ARGS_POST": true, "ARGS_POST_NAMES": true,
	"REQUEST_COOKIES": true, "REQUEST_COOKIES_NAMES": true,
	"REQUEST_HEADERS": true, "REQUEST_HEADERS_NAMES": true,
	"REQUEST_URI": true, "REQUEST_URI_RAW": true, "REQUEST_FILENAME": true,
	"REQUEST_BASENAME": true, "REQUEST_LINE": true, "QUERY_STRING": true,
	"REQUEST_BODY": true, "REQUEST_METHOD": true, "REQUEST_PROTOCOL": true,
	"FILES": true, "FILES_NAMES": true, "XML": true,
}

// Analyze finds the candidates of a rule set.
func Analyze(rs *seclang.RuleSet) Plan {
	var p Plan
	if rs.IgnoresCompilationErrors {
		// Coraza may drop rules this analysis still counts, which moves
		// skip windows: nothing is safe to remove.
		for _, r := range rs.Rules {
			if r.ID != 0 {
				p.Excluded = append(p.Excluded, Exclusion{r.ID, "SecIgnoreRuleCompilationErrors On"})
			}
		}
		return p
	}
	inSkipWindow := skipWindows(rs.Rules)
	for _, r := range rs.Rules {
		if r.ID == 0 || (r.Phase != 1 && r.Phase != 2) || r.Operator == nil || !decidable(r.Operator.Name) {
			continue
		}
		c, reason := candidate(r)
		switch {
		case reason != "":
		case inSkipWindow[r.ID]:
			reason = "inside a skip window"
		case rs.TargetsAdded[r.ID]:
			reason = "targets extended by SecRuleUpdateTarget"
		case rs.ActionsUpdated(r.ID):
			reason = "actions changed by SecRuleUpdateActionById"
		}
		if reason != "" {
			p.Excluded = append(p.Excluded, Exclusion{r.ID, reason})
			continue
		}
		p.Candidates = append(p.Candidates, c)
	}
	return p
}

func candidate(r *seclang.Rule) (Candidate, string) {
	if r.Operator.Negated {
		return Candidate{}, "negated operator"
	}
	if !r.HasTNone {
		return Candidate{}, "no t:none (default transformations would apply)"
	}
	fixed := fixedInPhase2
	if r.Phase == 1 {
		fixed = fixedInPhase1
	}
	for _, v := range r.Variables {
		switch {
		case v.Count:
			return Candidate{}, "counts a collection (&" + v.Name + ")"
		case !fixed[v.Name]:
			return Candidate{}, fmt.Sprintf("target %s can change during phase %d", v.Name, r.Phase)
		}
	}
	c := Candidate{
		ID: r.ID, Phase: r.Phase, Operator: r.Operator.Name, Argument: r.Operator.Argument, Dir: filepath.Dir(r.Directive.File),
		Targets: r.Targets, Transformations: r.Transformations, MultiMatch: r.MultiMatch, Paranoia: paranoia(r.Tags),
	}
	if c.Operator != "rx" {
		return c, ""
	}
	re, err := goRegexp(c.Argument)
	if err != nil {
		return Candidate{}, fmt.Sprintf("pattern does not compile: %v", err)
	}
	if re != nil {
		c.Expr = re.String()
	}
	return c, ""
}

// goRegexp compiles an @rx argument as Coraza does when it uses Go's
// regexp: "(?sm)" + argument. It returns nil, and no error, for the
// expressions Coraza compiles with binaryregexp from the argument alone
// (MatchesArbitraryBytes).
func goRegexp(argument string) (*regexp.Regexp, error) {
	expr := "(?sm)" + argument
	if MatchesArbitraryBytes(expr) {
		return nil, nil
	}
	return regexp.Compile(expr)
}

// decidable reports whether the accelerator computes the operator's answer
// exactly as Coraza does: @rx (package exact, or package operators for
// binary expressions) and the operators package operators compiles. Those
// are the phase-2 operators of CRS that run on every argument at paranoia
// level 1; deciding them keeps their rules, and Coraza's transformation
// cache for their chains (megabytes for a large body), out of benign
// transactions.
func decidable(operator string) bool {
	switch operator {
	case "rx", "pm", "pmfromfile", "pmf", "detectxss", "validatebyterange":
		return true
	}
	return false
}

// skipWindows marks the rules a skip:N could land on. Coraza counts, per
// phase, the rules of that phase and SecMarkers (phase 0), and does not
// count rules removed for the transaction. A rule removed at run time by
// a ctl action inside the window pushes it further, so the window runs to
// the next SecMarker when that is further than N rules.
func skipWindows(rules []*seclang.Rule) map[int]bool {
	marked := map[int]bool{}
	for phase := 1; phase <= 5; phase++ {
		var inPhase []*seclang.Rule
		for _, r := range rules {
			if r.Phase == phase || r.Phase == 0 {
				inPhase = append(inPhase, r)
			}
		}
		for i, r := range inPhase {
			if r.Skip <= 0 {
				continue
			}
			for j, n := i+1, 0; j < len(inPhase); j, n = j+1, n+1 {
				next := inPhase[j]
				if n >= r.Skip && next.Marker != "" {
					break
				}
				if next.ID != 0 {
					marked[next.ID] = true
				}
			}
		}
	}
	return marked
}

func paranoia(tags []string) int {
	for _, t := range tags {
		if rest, ok := strings.CutPrefix(t, "paranoia-level/"); ok {
			if n, err := strconv.Atoi(rest); err == nil {
				return n
			}
		}
	}
	return 0
}

// MatchesArbitraryBytes reports whether Coraza v3.8.1 would compile an
// expression with rsc.io/binaryregexp instead of regexp: it decodes the
// \xNN escapes (\x{NN} read as \xNN) and checks whether the result is
// valid UTF-8. Such patterns keep Coraza's own evaluation, so this must
// decide exactly as Coraza does, quirks included.
func MatchesArbitraryBytes(expr string) bool {
	decoded := make([]byte, 0, len(expr))
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch {
		case c != '\\':
			decoded = append(decoded, c)
			continue
		case i+3 >= len(expr):
			decoded = append(decoded, expr[i:]...)
			return !utf8.Valid(decoded)
		case expr[i+1] != 'x':
			decoded = append(decoded, c)
			continue
		}
		escape, advance := expr[i:], 3
		if len(escape) >= 6 && escape[2] == '{' {
			if end := strings.IndexByte(escape, '}'); end != -1 {
				escape, advance = `\x`+escape[3:end], end
			}
		}
		v, multibyte, _, err := strconv.UnquoteChar(escape, 0)
		if err != nil || multibyte {
			decoded = append(decoded, c)
			continue
		}
		decoded = append(decoded, byte(v))
		i += advance
	}
	return !utf8.Valid(decoded)
}
