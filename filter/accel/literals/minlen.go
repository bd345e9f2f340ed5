package literals

import (
	"fmt"
	"regexp/syntax"
)

// MinLen returns a lower bound on the length in bytes of any value expr
// matches a part of: every character of a match takes at least one byte
// (an invalid byte, which Go's regexp reads as U+FFFD, takes exactly one).
// A shorter value cannot match, whatever its bytes are.
func MinLen(expr string) (int, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 0, fmt.Errorf("parsing %q: %w", expr, err)
	}
	return minLen(re), nil
}

func minLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minLen(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minLen(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			n += minLen(sub)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, sub := range re.Sub {
			if m := minLen(sub); n < 0 || m < n {
				n = m
			}
		}
		return max(n, 0)
	}
	return 0 // empty-width assertions, empty match, star, quest, no match
}
