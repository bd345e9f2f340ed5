package literals

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits that keep the derived sets small: past them a node is treated as
// "matches anything", which only makes the prefilter weaker.
const (
	maxExact      = 64 // strings in an exact set
	maxClassRunes = 24 // folded runes a character class may expand to
	maxRequired   = 256
)

// Required returns folded strings one of which every match of expr must
// contain, or ok=false when no such set was found (the expression can
// match without any fixed text, e.g. `\w+`). expr uses Go's syntax
// (regexp/syntax.Perl flags, as regexp.Compile parses it).
func Required(expr string) (set []string, ok bool, err error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, false, fmt.Errorf("parsing %q: %w", expr, err)
	}
	set = requirement(analyze(re))
	return set, set != nil, nil
}

// info describes what a sub-expression's matches look like.
type info struct {
	// exact, when not nil, is every string the node can match.
	exact []string
	// required, when not nil, holds strings one of which every match
	// contains. A node with neither matches text we know nothing about.
	required []string
}

func analyze(re *syntax.Regexp) info {
	switch re.Op {
	case syntax.OpNoMatch:
		// Never matches: any requirement is vacuously true, but an empty
		// exact set would let an alternation drop the branch, which is
		// what we want.
		return info{exact: []string{}}
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return info{exact: []string{""}}
	case syntax.OpLiteral:
		return info{exact: []string{foldString(string(re.Rune))}}
	case syntax.OpCharClass:
		return classInfo(re.Rune)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return info{}
	case syntax.OpCapture:
		return analyze(re.Sub[0])
	case syntax.OpQuest:
		sub := analyze(re.Sub[0])
		if sub.exact != nil {
			return info{exact: union(sub.exact, []string{""})}
		}
		return info{}
	case syntax.OpStar:
		return info{}
	case syntax.OpPlus:
		return info{required: requirement(analyze(re.Sub[0]))}
	case syntax.OpRepeat:
		if re.Min == 0 {
			return info{}
		}
		return info{required: requirement(analyze(re.Sub[0]))}
	case syntax.OpConcat:
		return concat(re.Sub)
	case syntax.OpAlternate:
		return alternate(re.Sub)
	}
	return info{}
}

func classInfo(ranges []rune) info {
	seen := map[rune]bool{}
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i+1]-ranges[i] >= maxClassRunes*4 {
			return info{}
		}
		for r := ranges[i]; r <= ranges[i+1]; r++ {
			seen[foldRune(r)] = true
			if len(seen) > maxClassRunes {
				return info{}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, string(r))
	}
	slices.Sort(out)
	return info{exact: out}
}

// concat walks the parts left to right, multiplying exact sets while they
// stay small; every part (and every finished product) offers a
// requirement, and the strongest one is kept.
func concat(subs []*syntax.Regexp) info {
	var offers [][]string
	product := []string{""}
	for _, sub := range subs {
		in := analyze(sub)
		if product != nil && in.exact != nil && len(product)*len(in.exact) <= maxExact {
			product = cross(product, in.exact)
			continue
		}
		if product != nil {
			offers = append(offers, requirement(info{exact: product}))
		}
		offers = append(offers, requirement(in))
		product = nil
		if in.exact != nil {
			product = in.exact
		} else {
			product = []string{""}
		}
	}
	if len(offers) == 0 {
		return info{exact: product}
	}
	offers = append(offers, requirement(info{exact: product}))
	return info{required: strongest(offers)}
}

func alternate(subs []*syntax.Regexp) info {
	var exact, required []string
	allExact, unbounded := true, false
	for _, sub := range subs {
		in := analyze(sub)
		if in.exact != nil && len(in.exact) == 0 {
			continue // a branch that never matches adds nothing
		}
		if allExact && in.exact != nil && len(exact)+len(in.exact) <= maxExact {
			exact = union(exact, in.exact)
		} else {
			allExact = false
		}
		if r := requirement(in); r != nil {
			required = union(required, r)
		} else {
			unbounded = true
		}
	}
	switch {
	case allExact:
		return info{exact: exact}
	case unbounded || len(required) > maxRequired:
		return info{}
	}
	return info{required: required}
}

// requirement turns what is known of a node into strings one of which
// each match contains, or nil when there is no such set.
func requirement(in info) []string {
	if in.exact != nil {
		if slices.Contains(in.exact, "") {
			return nil
		}
		if len(in.exact) == 0 {
			// A node that never matches has no useful requirement.
			return nil
		}
		return minimal(in.exact)
	}
	return in.required
}

// strongest picks the offer whose shortest string is longest (a rarer
// string prunes more), preferring fewer strings on a tie.
func strongest(offers [][]string) []string {
	var best []string
	bestLen := -1
	for _, o := range offers {
		if o == nil {
			continue
		}
		l := shortest(o)
		if l > bestLen || (l == bestLen && len(o) < len(best)) {
			best, bestLen = o, l
		}
	}
	return best
}

func shortest(set []string) int {
	n := -1
	for _, s := range set {
		if l := utf8.RuneCountInString(s); n < 0 || l < n {
			n = l
		}
	}
	return n
}

func cross(a, b []string) []string {
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// minimal drops every string that contains another string of the set: a
// value containing the longer one contains the shorter one as well.
func minimal(set []string) []string {
	sorted := slices.Clone(set)
	slices.SortFunc(sorted, func(a, b string) int { return len(a) - len(b) })
	var out []string
	for _, s := range sorted {
		covered := false
		for _, kept := range out {
			if strings.Contains(s, kept) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}
