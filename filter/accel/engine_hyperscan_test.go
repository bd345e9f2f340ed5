//go:build corazawaf_hyperscan

package accel

import (
	"regexp"
	"strings"
	"testing"
)

func TestHyperscanEngineTakesTheWeakExpressions(t *testing.T) {
	// `[\n\r]` needs only a common character: RE2 would check it value by
	// value; Hyperscan takes it. `evilword` stays on the literal prefilter.
	exprs := []string{`(?sm)[\n\r]`, `(?sm)evilword`}
	e, err := DefaultEngine(exprs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.Prefilter.Name(), "hyperscan") || e.Direct[0] != nil {
		t.Fatalf("engine %q, direct %v: Hyperscan did not take the expression", e.Prefilter.Name(), e.Direct)
	}
	hits, _ := e.Prefilter.MayMatch("a\nb evilword", nil, nil)
	if len(hits) != 2 {
		t.Errorf("hits %v, want both expressions", hits)
	}
}

func TestHyperscanEngineFallsBackToPureGo(t *testing.T) {
	t.Setenv("CORAZAWAF_HYPERSCAN", "off")
	e, err := DefaultEngine([]string{`(?sm)[\n\r]`, `(?sm)evilword`})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.Prefilter.Name(), "falling back from Hyperscan: disabled") || e.Direct[0] == nil {
		t.Errorf("engine %q: want the pure-Go fall-back, named as such", e.Prefilter.Name())
	}
}

// Hyperscan misses the empty line after a value's last newline, which
// Go's regexp (Coraza) finds: expressions that can match the empty
// string stay on RE2, and the engine answers as Go does.
func TestHyperscanEngineLeavesEmptyMatchesToRE2(t *testing.T) {
	exprs := []string{`(?sm)^$`, `(?sm)^\s*$`}
	e, err := DefaultEngine(exprs)
	if err != nil {
		t.Fatal(err)
	}
	for i, expr := range exprs {
		if e.Direct[i] == nil {
			t.Fatalf("%s went to Hyperscan", expr)
		}
		re := regexp.MustCompile(expr)
		for _, v := range []string{"x\n", "x\r\n", "\n", "", "x", "\nx", "a\n\nb"} {
			if got, want := e.Direct[i].MatchString(v), re.MatchString(v); got != want {
				t.Errorf("%s on %q: %v, Go's regexp %v", expr, v, got, want)
			}
		}
	}
}
