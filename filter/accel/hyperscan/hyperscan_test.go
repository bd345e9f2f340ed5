//go:build corazawaf_hyperscan

package hyperscan

import (
	"regexp"
	"slices"
	"testing"

	"github.com/wafsweep/wafsweep/filter/accel/translate"
	"github.com/wafsweep/wafsweep/filter/internal/crscorpus"
)

func TestHyperscanAnswersAsGoRegexp(t *testing.T) {
	exprs := []string{`(?sm)(?i)kill`, `(?sm)^rm -rf$`, `(?sm)\bcat\b`, `(?sm)a.b`, `(?sm)[^a-z]x`, `(?sm)^id$`}
	inputs := []string{"\u212Aill", "KILL", "x\nrm -rf\ny", "xrm -rf", "bobcat", "cat_", "a cat.", "a\xffb", "\xffx", "ax", "id", "x\nid"}
	db, err := Compile(exprs, Options{NoPrefilterMode: true, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	agree(t, db, exprs, inputs)
}

// TestHyperscanOnCRS compiles every CRS candidate expression Hyperscan
// takes exactly and compares it with Go's regexp on the CRS suite's strings.
func TestHyperscanOnCRS(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the CRS expressions one by one (tens of seconds)")
	}
	cands, err := crscorpus.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	exprs := make([]string, len(cands))
	for i, c := range cands {
		exprs[i] = c.Expr
	}
	corpus, err := crscorpus.Strings(1500, 300)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Compile(exprs, Options{NoPrefilterMode: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	covered := 0
	for i := range exprs {
		if db.Covered(i) {
			covered++
		}
	}
	t.Logf("Hyperscan %s takes %d of %d expressions exactly", Version(), covered, len(exprs))
	agree(t, db, exprs, corpus)
}

func agree(t *testing.T, db *Database, exprs, inputs []string) {
	t.Helper()
	res := make([]*regexp.Regexp, len(exprs))
	for i, e := range exprs {
		res[i] = regexp.MustCompile(e)
	}
	buf := db.NewIDs()
	for _, in := range inputs {
		hits, err := db.Scan(translate.Sanitize(in), nil, buf)
		if err != nil {
			t.Fatal(err)
		}
		for i, re := range res {
			if !db.Covered(i) {
				continue
			}
			if want, got := re.MatchString(in), slices.Contains(hits, int32(i)); got != want {
				t.Errorf("%.50q on %.40q: Hyperscan %v, Go %v", exprs[i], in, got, want)
			}
		}
	}
}
