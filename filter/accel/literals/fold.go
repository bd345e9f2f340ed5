// Package literals derives, from a Go regular expression's syntax tree, a
// set of strings one of which every match must contain, and scans values
// for all such strings of many expressions at once (Aho-Corasick). It is
// the accelerator's pure-Go prefilter: a value that contains none of an
// expression's strings cannot match it.
//
// Both sides are case-folded with Go's simple folding orbits (so "k", "K"
// and the Kelvin sign U+212A are one letter, as (?i) treats them), and the
// value is decoded as Go's regexp decodes it: each byte that is not valid
// UTF-8 is U+FFFD. Folding everything can only add matches of the strings,
// never lose one, so case-sensitive expressions stay sound.
package literals

import (
	"unicode"
	"unicode/utf8"
)

// foldRune maps a rune to the smallest member of its simple folding orbit.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// asciiFold is foldRune for bytes below 0x80.
var asciiFold = func() (t [128]byte) {
	for i := range t {
		t[i] = byte(foldRune(rune(i)))
	}
	return t
}()

// AppendFolded appends the folded form of value to dst. Plain ASCII, the
// common case, is folded byte by byte.
func AppendFolded(dst []byte, value string) []byte {
	i := 0
	for ; i < len(value); i++ {
		c := value[i]
		if c >= utf8.RuneSelf {
			break
		}
		dst = append(dst, asciiFold[c])
	}
	for i < len(value) {
		c := value[i]
		if c < utf8.RuneSelf {
			dst = append(dst, asciiFold[c])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(value[i:])
		// An invalid byte decodes as RuneError of size 1, which is what
		// Go's regexp sees there too.
		dst = utf8.AppendRune(dst, foldRune(r))
		i += size
	}
	return dst
}

// foldString folds a string of runes taken from a pattern.
func foldString(s string) string {
	return string(AppendFolded(nil, s))
}
