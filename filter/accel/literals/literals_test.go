package literals_test

import (
	"crypto/sha256"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/filter/accel/literals"
	"github.com/wafsweep/wafsweep/filter/internal/crscorpus"
)

func TestRequired(t *testing.T) {
	tests := []struct {
		expr string
		want []string // nil: no requirement
	}{
		{`union\s+select`, []string{"SELECT"}},
		{`(?i)colou?r`, []string{"COLOR", "COLOUR"}},
		{`foo|bar`, []string{"BAR", "FOO"}},
		{`foo|\w+`, nil},
		{`a*`, nil},
		{`[\"'\x60]`, []string{"\"", "'", "`"}},
		{`(?:abc)+d`, []string{"ABC"}}, // a repeat offers what one copy requires
		{`\bkey\b`, []string{"KEY"}},
		{`x{0,3}yz`, []string{"YZ"}},
		{`(?i)\x{212A}elvin`, []string{"KELVIN"}}, // the Kelvin sign folds with k
	}
	for _, tt := range tests {
		got, ok, err := literals.Required(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		if ok != (tt.want != nil) || !slices.Equal(got, tt.want) {
			t.Errorf("Required(%q) = %q, %v; want %q", tt.expr, got, ok, tt.want)
		}
	}
}

func TestAppendFoldedReadsAsGoRegexpDoes(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Select", "SELECT"},
		{"\u212Aelvin", "KELVIN"}, // Kelvin sign
		{"\u017Fleep", "SLEEP"},   // long s
		{"a\xffb", "A\uFFFDB"},    // an invalid byte is U+FFFD
		{"\xc3\xa9t\xc3\xa9", "\u00c9T\u00c9"},
	}
	for _, tt := range tests {
		if got := string(literals.AppendFolded(nil, tt.in)); got != tt.want {
			t.Errorf("AppendFolded(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAutomatonFindsOverlappingStrings(t *testing.T) {
	a := literals.NewAutomaton([][]string{{"SELECT"}, {"ELECT"}, {"LECTURE", "XYZ"}, nil})
	var got []int32
	a.Scan([]byte("SELECTURE"), func(p int32) { got = append(got, p) })
	slices.Sort(got)
	if want := []int32{0, 1, 2}; !slices.Equal(slices.Compact(got), want) {
		t.Errorf("hits %v, want %v", got, want)
	}
}

// TestAutomatonBeyond16BitStates builds an automaton with more states than
// 16-bit table entries can name: strings whose states come last must still
// be found, and only those in the value.
func TestAutomatonBeyond16BitStates(t *testing.T) {
	var sets [][]string
	for i := range 12_000 { // hashes share prefixes of 3 characters at most
		sum := sha256.Sum256([]byte{byte(i), byte(i >> 8)})
		sets = append(sets, []string{strings.ToUpper(fmt.Sprintf("%x", sum[:5]))})
	}
	a := literals.NewAutomaton(sets)
	if a.States() <= 65_536 {
		t.Fatalf("%d states: the test needs more than 65,536", a.States())
	}
	last := len(sets) - 1
	value := "xx" + sets[last][0] + "yy" + sets[0][0]
	var got []int32
	a.Scan([]byte(value), func(p int32) { got = append(got, p) })
	slices.Sort(got)
	if want := []int32{0, int32(last)}; !slices.Equal(slices.Compact(got), want) {
		t.Errorf("hits %v, want %v", got, want)
	}
}

// TestRequiredIsSoundOnCRS is the property the accelerator rests on: for
// every CRS candidate expression and every string of the CRS regression
// suite it matches, the folded string contains one of its required strings.
func TestRequiredIsSoundOnCRS(t *testing.T) {
	cands, err := crscorpus.Expressions()
	if err != nil {
		t.Fatal(err)
	}
	corpus := crscorpus.TestStrings(t, 3000, 300)
	matches := 0
	for _, c := range cands {
		set, ok, err := literals.Required(c.Expr)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		re := regexp.MustCompile(c.Expr)
		for _, s := range corpus {
			if !re.MatchString(s) {
				continue
			}
			matches++
			folded := string(literals.AppendFolded(nil, s))
			if !slices.ContainsFunc(set, func(lit string) bool { return strings.Contains(folded, lit) }) {
				t.Errorf("rule %d matches %q, which holds none of %q", c.ID, s, set)
			}
		}
	}
	if matches < 50 {
		t.Errorf("only %d matches: the corpus does not exercise the expressions", matches)
	}
	t.Logf("%d candidate expressions, %d strings, %d matches checked", len(cands), len(corpus), matches)
}

func TestMinLen(t *testing.T) {
	for _, tt := range []struct {
		expr string
		want int
	}{
		{`abc`, 3}, {`a|bc`, 1}, {`x*y`, 1}, {`(?:ab){2,}`, 4}, {`^\bq$`, 1}, {`a?`, 0}, {`[a-z]+\d`, 2},
	} {
		if got, err := literals.MinLen(tt.expr); err != nil || got != tt.want {
			t.Errorf("MinLen(%q) = %d, %v; want %d", tt.expr, got, err, tt.want)
		}
	}
}
