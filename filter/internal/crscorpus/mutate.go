package crscorpus

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"

	// Coraza's htmlEntityDecode is this package's UnescapeString, which
	// knows more entities than the standard library's html.
	"golang.org/x/net/html"
)

// The generators below make the inputs of the accelerator's differential
// tests: CRS payloads dressed in the encodings CRS's transformations undo
// (and some they undo differently from a browser), and values built to
// stress the transformations themselves. They are deterministic for a
// given *rand.Rand, so a failing seed can be replayed.

// Bypass is the request value that went through the accelerated module
// while stock Coraza blocked it: htmlEntityDecode keeps its byte length
// (every "&apos;" and "&#97;" shrinks what one "&nGt;" grows), so Coraza
// reports the decode as "unchanged", and a multiMatch chain never sees
// the decoded "');alert(1);//".
const Bypass = "&apos;);&#97;lert(1);//&nGt;&nGt;&nGt;&nGt;&nGt;&nGt;&nGt;&nGt;&nGt;"

// fragments are the byte sequences CRS's transformations treat specially.
var fragments = []string{
	// HTML and XML entities: named with and without ';', numeric, out
	// of range, surrogates, nested, and the ones that decode longer
	// than they are written.
	"&lt;", "&gt;", "&lt", "&GT;", "&amp;", "&amp;lt;", "&quot;", "&apos;", "&nbsp;", "&nbsp",
	"&#60;", "&#060;", "&#x3c;", "&#X3C;", "&#x3c", "&#0;", "&#xD800;", "&#1114112;", "&#;", "&#x;",
	"&nGt;", "&nLt;", "&acE;", "&NotEqualTilde;", "&bne;", "&fjlig;", "&ThickSpace;", "&acE;x",
	// Percent and %u encodings, valid, truncated and overlong UTF-8.
	"%3c", "%3C", "%253c", "%u003c", "%U003C", "%uff1c", "%%", "%zz", "%", "%2", "%00", "%c0%bc", "%e0%80%bc", "+",
	// JavaScript, CSS and C escapes.
	`\x3c`, `\u003c`, `\u{3c}`, `\074`, `\\`, `\'`, `\"`, `\n`, `\3c `, `\00003c`, `\3c`, `\`, `\a`, `\x`, `\u12`,
	// Comments, whitespace and NUL.
	"/*", "*/", "/**/", "--", "#", "<!--", "-->", " ", "\t", "\r\n", "\v", "\f", "\u00a0", "\x00", "\x00\x00",
	// Invalid and unusual UTF-8.
	"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x80", "\xef\xbf\xbd", "\u212a", "\u017f", "\uff1c", "\u2028",
	// Paths and command lines.
	"../", "..\\", "/./", "//", "\\", "^", ",", ";", "'", "\"", "`", "$(", "${IFS}",
	// Words CRS looks for.
	"<script>", "javascript:", "alert(1)", "onerror=", "union select", "SELECT", "/etc/passwd", "cmd.exe", "eval(",
}

// growing are named entities whose decoded UTF-8 is one byte longer than
// the entity, so each one pays back a byte that a shrinking decode took.
var growing = growingEntities()

func growingEntities() []string {
	var out []string
	for _, e := range []string{"&nGt;", "&nLt;", "&nvgt;", "&nvlt;", "&race;", "&acE;", "&nbump;", "&nesim;", "&nvap;"} {
		if len(html.UnescapeString(e)) == len(e)+1 {
			out = append(out, e)
		}
	}
	return out
}

// Adversarial returns a value made of fragments, pieces of payloads and
// random bytes, sometimes encoded, sometimes made length-preserving.
func Adversarial(rng *rand.Rand, payloads []string) string {
	var b strings.Builder
	for n := 1 + rng.IntN(8); n > 0; n-- {
		switch rng.IntN(6) {
		case 0, 1:
			b.WriteString(fragments[rng.IntN(len(fragments))])
		case 2:
			if len(payloads) > 0 {
				p := payloads[rng.IntN(len(payloads))]
				lo := rng.IntN(len(p))
				b.WriteString(p[lo : lo+rng.IntN(len(p)-lo)+1])
			}
		case 3:
			for k := rng.IntN(4); k >= 0; k-- {
				b.WriteByte(byte(rng.IntN(256)))
			}
		default:
			b.WriteString(string(rune('a' + rng.IntN(26))))
		}
	}
	s := b.String()
	if rng.IntN(3) == 0 {
		s = Mutate(rng, s)
	}
	return s
}

// encoding is one way to dress a payload.
type encoding struct {
	name   string
	encode func(rng *rand.Rand, s string) string
}

var encodings = []encoding{
	{"url", func(_ *rand.Rand, s string) string { return percentAll(s) }},
	{"url-double", func(_ *rand.Rand, s string) string { return strings.ReplaceAll(percentAll(s), "%", "%25") }},
	{"url-unicode", func(_ *rand.Rand, s string) string { return perRune(s, "%%u%04x") }},
	{"html-decimal", func(_ *rand.Rand, s string) string { return perRune(s, "&#%d;") }},
	{"html-hex", func(_ *rand.Rand, s string) string { return perRune(s, "&#x%x;") }},
	{"html-hex-padded", func(_ *rand.Rand, s string) string { return perRune(s, "&#x%06x") }},
	{"html-named", func(_ *rand.Rand, s string) string { return htmlNamed(s) }},
	{"html-length-preserving", lengthPreserving},
	{"js-hex", func(_ *rand.Rand, s string) string { return perByte(s, `\x%02x`) }},
	{"js-unicode", func(_ *rand.Rand, s string) string { return perRune(s, `\u%04x`) }},
	{"js-octal", func(_ *rand.Rand, s string) string { return perByte(s, `\%03o`) }},
	{"css", func(_ *rand.Rand, s string) string { return perRune(s, `\%x `) }},
	{"base64", func(_ *rand.Rand, s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }},
	{"case", flipCase},
	{"padding", pad},
	{"nul", func(rng *rand.Rand, s string) string { return sprinkle(rng, s, "\x00") }},
	{"comments", func(rng *rand.Rand, s string) string { return sprinkle(rng, s, "/**/") }},
	{"invalid-utf8", func(rng *rand.Rand, s string) string { return sprinkle(rng, s, "\xff") }},
	{"overlong-utf8", func(_ *rand.Rand, s string) string { return overlong(s) }},
	{"fullwidth", func(_ *rand.Rand, s string) string { return fullwidth(s) }},
	{"cmdline", func(rng *rand.Rand, s string) string { return sprinkle(rng, s, "^") }},
}

// EncodingNames lists the encodings Mutate draws from.
func EncodingNames() []string {
	names := make([]string, len(encodings))
	for i, e := range encodings {
		names[i] = e.name
	}
	return names
}

// Encode applies the named encoding to all of s.
func Encode(rng *rand.Rand, name, s string) (string, error) {
	for _, e := range encodings {
		if e.name == name {
			return e.encode(rng, s), nil
		}
	}
	return "", fmt.Errorf("no encoding %q", name)
}

// Mutate applies one to three random encodings, each to the whole value
// or to a random part of it (attackers encode only what a filter looks for).
func Mutate(rng *rand.Rand, s string) string {
	for n := 1 + rng.IntN(3); n > 0 && s != ""; n-- {
		e := encodings[rng.IntN(len(encodings))]
		if rng.IntN(2) == 0 {
			s = e.encode(rng, s)
			continue
		}
		lo := rng.IntN(len(s))
		hi := lo + 1 + rng.IntN(len(s)-lo)
		s = s[:lo] + e.encode(rng, s[lo:hi]) + s[hi:]
	}
	if len(s) > 4096 {
		s = s[:4096]
	}
	return s
}

func percentAll(s string) string { return perByte(s, "%%%02x") }

func perByte(s, format string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, format, s[i])
	}
	return b.String()
}

func perRune(s, format string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, format, r)
	}
	return b.String()
}

var named = strings.NewReplacer("<", "&lt;", ">", "&gt;", "&", "&amp;", `"`, "&quot;", "'", "&apos;",
	"(", "&lpar;", ")", "&rpar;", ":", "&colon;", "/", "&sol;", ";", "&semi;", " ", "&Tab;", "=", "&equals;")

func htmlNamed(s string) string { return named.Replace(s) }

// lengthPreserving writes letters and punctuation as entities, then pays
// back the bytes saved with entities that decode longer, so that the
// decoded value has exactly the length of the encoded one.
func lengthPreserving(rng *rand.Rand, s string) string {
	var b strings.Builder
	saved := 0
	for _, r := range s {
		if r < 0x80 && rng.IntN(2) == 0 {
			e := fmt.Sprintf("&#%d;", r)
			b.WriteString(e)
			saved += len(e) - 1
			continue
		}
		b.WriteRune(r)
	}
	pay := strings.Repeat(growing[rng.IntN(len(growing))], saved)
	if rng.IntN(2) == 0 {
		return pay + b.String()
	}
	return b.String() + pay
}

func flipCase(rng *rand.Rand, s string) string {
	b := []byte(s)
	for i, c := range b {
		if rng.IntN(2) == 0 && (c|0x20) >= 'a' && (c|0x20) <= 'z' {
			b[i] = c ^ 0x20
		}
	}
	return string(b)
}

var pads = []string{" ", "  ", "\t", "\n", "\r\n", "\v", "\f", "\u00a0", "+"}

func pad(rng *rand.Rand, s string) string {
	return pads[rng.IntN(len(pads))] + s + pads[rng.IntN(len(pads))]
}

// sprinkle puts insert between some bytes of s.
func sprinkle(rng *rand.Rand, s, insert string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if rng.IntN(4) == 0 {
			b.WriteString(insert)
		}
	}
	return b.String()
}

// overlong writes ASCII as two-byte overlong UTF-8, percent-encoded.
func overlong(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x80 {
			fmt.Fprintf(&b, "%%%02x%%%02x", 0xc0|c>>6, 0x80|c&0x3f)
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// fullwidth maps printable ASCII to the fullwidth forms urlDecodeUni and
// utf8toUnicode treat specially.
func fullwidth(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > ' ' && r < 0x7f {
			r += 0xfee0
		}
		b.WriteRune(r)
	}
	return b.String()
}
