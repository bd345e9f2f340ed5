package phrases

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
	ahocorasick "github.com/petar-dambovaliev/aho-corasick"
)

type span struct{ start, end int }

func matches(m *Matcher, value string, limit int) []span {
	var got []span
	m.Matches(value, limit, func(start, end int) { got = append(got, span{start, end}) })
	return got
}

func TestMatcher(t *testing.T) {
	tests := []struct {
		name     string
		phrases  []string
		value    string
		contains bool
		matches  []span
	}{
		{"none", []string{"select", "union"}, "an ordinary value", false, nil},
		{"ascii case folded on both sides", []string{"SeLeCt"}, "x sELEct y", true, []span{{2, 8}}},
		{"non-ascii bytes compare exactly", []string{"é"}, "É", false, nil},
		{"shorter than every phrase", []string{"abcdef"}, "abc", false, nil},
		{"leftmost wins over earlier-ending", []string{"bcd", "abcdef"}, "abcdef", true, []span{{0, 6}, {1, 4}}},
		{"longest at the same start", []string{"ab", "abc", "a"}, "abcx", true, []span{{0, 3}}},
		{"matches may overlap", []string{"aa"}, "aaaa", true, []span{{0, 2}, {1, 3}, {2, 4}}},
		{"failure links reach a shorter phrase", []string{"abcx", "bc"}, "abcd", true, []span{{1, 3}}},
		{"phrase inside another's prefix", []string{"cat", "concatenate"}, "concatenated", true, []span{{0, 11}, {3, 6}}},
		{"bytes outside ascii letters", []string{"/etc/passwd", "\x00\xff"}, "GET /ETC/PASSWD\x00\xff", true, []span{{4, 15}, {15, 17}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(tt.phrases)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Contains(tt.value); got != tt.contains {
				t.Errorf("Contains(%q) = %v, want %v", tt.value, got, tt.contains)
			}
			if got := matches(m, tt.value, 10); !slices.Equal(got, tt.matches) {
				t.Errorf("Matches(%q) = %v, want %v", tt.value, got, tt.matches)
			}
		})
	}
}

func TestMatchesStopsAtTheLimit(t *testing.T) {
	m, err := New([]string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := matches(m, strings.Repeat("a", 50), 10); len(got) != 10 || got[9] != (span{9, 10}) {
		t.Errorf("got %v, want the first 10 matches", got)
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := New([]string{"a", "", "b"}); !errors.Is(err, ErrEmptyPhrase) {
		t.Errorf("empty phrase: err = %v, want ErrEmptyPhrase", err)
	}
}

func TestNoPhrasesMatchNothing(t *testing.T) {
	m, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Contains("") || m.Contains("anything") || len(matches(m, "anything", 10)) > 0 {
		t.Error("a matcher without phrases matched")
	}
}

// library builds the automaton Coraza's @pm operators use, with their options.
func library(phrases []string, dfa bool) ahocorasick.AhoCorasick {
	b := ahocorasick.NewAhoCorasickBuilder(ahocorasick.Opts{
		AsciiCaseInsensitive: true,
		MatchKind:            ahocorasick.LeftMostLongestMatch,
		DFA:                  dfa,
	})
	return b.Build(phrases)
}

func libraryMatches(ac ahocorasick.AhoCorasick, value string, limit int) []span {
	var got []span
	it := ac.Iter(value)
	for m := it.Next(); m != nil && len(got) < limit; m = it.Next() {
		got = append(got, span{m.Start(), m.End()})
	}
	return got
}

// compare fails when the matcher and the library disagree on value.
func compare(t *testing.T, m *Matcher, ac ahocorasick.AhoCorasick, value string) {
	t.Helper()
	want := libraryMatches(ac, value, 10)
	if got := m.Contains(value); got != (len(want) > 0) {
		t.Fatalf("Contains(%q) = %v, library found %v", value, got, want)
	}
	if got := matches(m, value, 10); !slices.Equal(got, want) {
		t.Fatalf("Matches(%q) = %v, library %v", value, got, want)
	}
}

// TestAgreesWithTheLibraryOnRandomPhrases draws phrases and values from a
// small alphabet, so that prefixes, suffixes and overlaps are common.
func TestAgreesWithTheLibraryOnRandomPhrases(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := "abcAB-\xe9"
	word := func(maxLen int) string {
		b := make([]byte, 1+rng.IntN(maxLen))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for round := range 300 {
		var phrases []string
		for range 1 + rng.IntN(12) {
			phrases = append(phrases, strings.ToLower(word(6)))
		}
		m, err := New(phrases)
		if err != nil {
			t.Fatal(err)
		}
		for _, dfa := range []bool{false, true} {
			ac := library(phrases, dfa)
			for range 40 {
				t.Run(fmt.Sprintf("round%d", round), func(t *testing.T) { compare(t, m, ac, word(30)) })
			}
		}
	}
}

// TestAgreesWithTheLibraryOnCRSPhraseFiles builds every phrase file of
// CRS and scans values made of pieces of its phrases, so that matches,
// near misses and overlaps occur.
func TestAgreesWithTheLibraryOnCRSPhraseFiles(t *testing.T) {
	files := crsPhraseFiles(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for name, phrases := range files {
		t.Run(name, func(t *testing.T) {
			m, err := New(phrases)
			if err != nil {
				t.Fatal(err)
			}
			ac := library(phrases, false)
			for range 300 {
				var b strings.Builder
				for range 1 + rng.IntN(4) {
					p := phrases[rng.IntN(len(phrases))]
					i, j := rng.IntN(len(p)), rng.IntN(len(p)+1)
					if rng.IntN(2) == 0 {
						p = strings.ToUpper(p)
					}
					b.WriteString(p[min(i, j):max(i, j)])
					b.WriteString(" ?/"[rng.IntN(3):][:1])
				}
				compare(t, m, ac, b.String())
			}
		})
	}
}

// crsPhraseFiles reads CRS's .data files as Coraza's @pmFromFile does.
func crsPhraseFiles(t testing.TB) map[string][]string {
	root := crsRoot(t)
	names, err := fs.Glob(root, "@owasp_crs/*.data")
	if err != nil || len(names) == 0 {
		t.Fatalf("no CRS .data files: %v", err)
	}
	files := map[string][]string{}
	for _, name := range names {
		data, err := fs.ReadFile(root, name)
		if err != nil {
			t.Fatal(err)
		}
		if phrases := ParseFile(data); len(phrases) > 0 {
			files[name] = phrases
		}
	}
	return files
}

func FuzzAgreesWithTheLibrary(f *testing.F) {
	f.Add("abc bcd cd", "xabcdx")
	f.Add("/etc/passwd passwd", "GET /ETC/PASSWD")
	f.Fuzz(func(t *testing.T, list, value string) {
		phrases := strings.Split(strings.ToLower(list), " ") // as Coraza splits @pm's argument
		if len(phrases) == 0 || slices.Contains(phrases, "") {
			return
		}
		m, err := New(phrases)
		if err != nil {
			t.Fatal(err)
		}
		compare(t, m, library(phrases, true), value)
	})
}

func crsRoot(testing.TB) fs.FS { return coreruleset.FS }
