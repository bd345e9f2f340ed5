//go:build corazawaf_hyperscan

package accel

import (
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
