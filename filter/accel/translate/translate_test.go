package translate_test

import (
	"regexp"
	"testing"

	re2 "github.com/wasilibs/go-re2"

	"github.com/wafsweep/wafsweep/filter/accel/translate"
	"github.com/wafsweep/wafsweep/filter/internal/crscorpus"
)

// agree compiles expr both ways and checks that RE2 on the translation
// answers as Go's regexp does for each input.
func agree(t *testing.T, expr string, inputs ...string) int {
	t.Helper()
	goRE := regexp.MustCompile(expr)
	tr, err := translate.Translate(expr, translate.RE2)
	if err != nil {
		t.Fatal(err)
	}
	r, err := re2.Compile(tr)
	if err != nil {
		t.Fatalf("RE2 rejects %q (from %q): %v", tr, expr, err)
	}
	matches := 0
	for _, in := range inputs {
		want := goRE.MatchString(in)
		if got := r.MatchString(translate.Sanitize(in)); got != want {
			t.Errorf("%q on %q: RE2 %v, Go %v (translation %q)", expr, in, got, want, tr)
		}
		if want {
			matches++
		}
	}
	return matches
}

func TestTranslationKeepsGoSemantics(t *testing.T) {
	tests := []struct {
		name   string
		expr   string
		inputs []string
	}{
		{"kelvin sign folds with k", `(?i)kill`, []string{"KILL", "\u212Aill", "kiLL", "ill"}},
		{"long s folds with s", `(?i)select`, []string{"\u017Felect", "SELECT", "elect"}},
		{"dot matches an invalid byte", `(?s)a.b`, []string{"a\xffb", "a\nb", "ab"}},
		{"class with U+FFFD matches an invalid byte", `[^a-z]x`, []string{"\xffx", "ax"}},
		{"word boundary is ASCII", `\bcat\b`, []string{"cat", "écat", "bobcat", "cat_"}},
		{"multi-line anchors", `(?m)^rm -rf$`, []string{"x\nrm -rf\ny", "rm -rf", "xrm -rf"}},
		{"text anchors without m", `^id$`, []string{"id", "id\n", "x\nid"}},
		{"unicode classes from Go's tables", `\pL+\d`, []string{"é1", "ǅ2", "1"}},
		{"counted repeat", `a{2,3}b`, []string{"aab", "ab", "aaaab"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { agree(t, tt.expr, tt.inputs...) })
	}
}

func TestSanitize(t *testing.T) {
	if got := translate.Sanitize("a\xff\xc3"); got != "a\uFFFD\uFFFD" {
		t.Errorf("Sanitize = %q", got)
	}
	if s := "plain é"; translate.Sanitize(s) != s {
		t.Error("valid UTF-8 must come back unchanged")
	}
}

// TestTranslationAgreesOnCRS runs every CRS candidate expression, Coraza's
// (?sm) form, both ways over the CRS regression suite's strings.
func TestTranslationAgreesOnCRS(t *testing.T) {
	cands, err := crscorpus.Expressions()
	if err != nil {
		t.Fatal(err)
	}
	corpus := crscorpus.TestStrings(t, 2000, 300)
	corpus = append(corpus, "\xff\xfe<script>", "s\xe9lect", "\u212Aill -9")
	matches := 0
	for _, c := range cands {
		matches += agree(t, c.Expr, corpus...)
	}
	t.Logf("%d expressions x %d strings, %d matches", len(cands), len(corpus), matches)
}
