// Package translate rewrites a Go regular expression, from Go's own parse
// tree, into an equivalent expression for another RE2-family engine
// (RE2, Hyperscan), so that the other engine answers "does it match" as Go
// does:
//   - case folding is spelled out as classes of Go's simple folding
//     orbits (k, K and U+212A; s, S and U+017F), so the other engine's
//     Unicode tables do not matter;
//   - character classes become explicit code-point ranges from Go's tables;
//   - anchors keep Go's meaning: line anchors for (?m) ^ and $, text
//     anchors otherwise, ASCII \b;
//   - captures and greediness are dropped: only the yes/no answer counts.
//
// The other engine must match valid UTF-8 code points; callers replace
// each byte that is not valid UTF-8 with U+FFFD before matching (see
// Sanitize), which is how Go's regexp reads such bytes.
package translate

import (
	"fmt"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Dialect says how the target engine spells what differs between engines.
type Dialect struct {
	// TextStart and TextEnd are the absolute anchors (\A and \z).
	TextStart, TextEnd string
	// LineStart and LineEnd are the multi-line anchors.
	LineStart, LineEnd string
}

// RE2 is the dialect of RE2 (and go-re2).
var RE2 = Dialect{TextStart: `\A`, TextEnd: `\z`, LineStart: `(?m:^)`, LineEnd: `(?m:$)`}

// Hyperscan is the dialect of Hyperscan compiled with HS_FLAG_MULTILINE
// (which makes ^ and $ line anchors) and HS_FLAG_UTF8.
var Hyperscan = Dialect{TextStart: `\A`, TextEnd: `\z`, LineStart: `^`, LineEnd: `$`}

// Translate parses expr with Go's rules (regexp.Compile's flags) and
// writes it in the dialect.
func Translate(expr string, d Dialect) (string, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("parsing %q: %w", expr, err)
	}
	var b strings.Builder
	write(&b, re, d)
	return b.String(), nil
}

func write(b *strings.Builder, re *syntax.Regexp, d Dialect) {
	switch re.Op {
	case syntax.OpNoMatch:
		b.WriteString(`[^\x{0}-\x{10FFFF}]`)
	case syntax.OpEmptyMatch:
		b.WriteString(`(?:)`)
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && unicode.SimpleFold(r) != r {
				writeClass(b, foldRanges(r))
			} else {
				writeRune(b, r)
			}
		}
	case syntax.OpCharClass:
		writeClass(b, re.Rune)
	case syntax.OpAnyCharNotNL:
		b.WriteString(`[^\n]`)
	case syntax.OpAnyChar:
		b.WriteString(`[\x{0}-\x{10FFFF}]`)
	case syntax.OpBeginLine:
		b.WriteString(d.LineStart)
	case syntax.OpEndLine:
		b.WriteString(d.LineEnd)
	case syntax.OpBeginText:
		b.WriteString(d.TextStart)
	case syntax.OpEndText:
		b.WriteString(d.TextEnd)
	case syntax.OpWordBoundary:
		b.WriteString(`\b`)
	case syntax.OpNoWordBoundary:
		b.WriteString(`\B`)
	case syntax.OpCapture:
		group(b, re.Sub[0], d)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		group(b, re.Sub[0], d)
		b.WriteString(map[syntax.Op]string{syntax.OpStar: "*", syntax.OpPlus: "+", syntax.OpQuest: "?"}[re.Op])
	case syntax.OpRepeat:
		group(b, re.Sub[0], d)
		switch {
		case re.Max == -1:
			fmt.Fprintf(b, "{%d,}", re.Min)
		case re.Min == re.Max:
			fmt.Fprintf(b, "{%d}", re.Min)
		default:
			fmt.Fprintf(b, "{%d,%d}", re.Min, re.Max)
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpAlternate {
				group(b, sub, d)
			} else {
				write(b, sub, d)
			}
		}
	case syntax.OpAlternate:
		for i, sub := range re.Sub {
			if i > 0 {
				b.WriteByte('|')
			}
			write(b, sub, d)
		}
	default:
		panic(fmt.Sprintf("translate: unknown regexp op %v", re.Op))
	}
}

// group writes re as one atom.
func group(b *strings.Builder, re *syntax.Regexp, d Dialect) {
	b.WriteString("(?:")
	write(b, re, d)
	b.WriteString(")")
}

// foldRanges is the class of r's simple folding orbit.
func foldRanges(r rune) []rune {
	var out []rune
	for f := r; ; {
		out = append(out, f, f)
		if f = unicode.SimpleFold(f); f == r {
			return out
		}
	}
}

func writeClass(b *strings.Builder, ranges []rune) {
	if len(ranges) == 0 {
		b.WriteString(`[^\x{0}-\x{10FFFF}]`)
		return
	}
	b.WriteByte('[')
	for i := 0; i+1 < len(ranges); i += 2 {
		writeClassRune(b, ranges[i])
		if ranges[i+1] != ranges[i] {
			b.WriteByte('-')
			writeClassRune(b, ranges[i+1])
		}
	}
	b.WriteByte(']')
}

func writeClassRune(b *strings.Builder, r rune) {
	if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
		b.WriteRune(r)
		return
	}
	b.WriteString(`\x{` + strconv.FormatInt(int64(r), 16) + `}`)
}

func writeRune(b *strings.Builder, r rune) {
	if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == ' ' || r == '_') {
		b.WriteRune(r)
		return
	}
	b.WriteString(`\x{` + strconv.FormatInt(int64(r), 16) + `}`)
}

// Sanitize returns s with each byte that is not valid UTF-8 replaced by
// U+FFFD, which is what Go's regexp sees at such a byte; valid input is
// returned as it is.
func Sanitize(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
