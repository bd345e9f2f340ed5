package waf

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
)

// memoBuilds counts the builds of the test operator below: a build happens
// only when Coraza's process-wide cache has no entry for its key.
var memoBuilds atomic.Int32

func init() {
	plugins.RegisterOperator("wafsweepTestMemoized", func(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
		v, err := o.Memoizer.Do("wafsweep-test:"+o.Arguments, func() (any, error) {
			memoBuilds.Add(1)
			return neverMatches{}, nil
		})
		if err != nil {
			return nil, err
		}
		return v.(neverMatches), nil
	})
}

type neverMatches struct{}

func (neverMatches) Evaluate(plugintypes.TransactionState, string) bool { return false }

// TestCloseReleasesTheSharedCacheOnlyWhenNoRuleSetHoldsIt builds rule sets
// sharing one cached object: closing one keeps it for the other; closing
// every one (a detect-only twin included) drops it, so the next build
// compiles again instead of the cache growing with every rule set Envoy
// ever loaded.
func TestCloseReleasesTheSharedCacheOnlyWhenNoRuleSetHoldsIt(t *testing.T) {
	cfg := Config{Directives: []string{`SecRule ARGS "@wafsweepTestMemoized close-test" "id:1,phase:1,pass,nolog"`}}
	cfg.applyDefaults()
	build := func() *Engine { return mustEngine(t, cfg) }
	first := build()
	if _, err := first.DetectOnly(); err != nil {
		t.Fatal(err)
	}
	second := build()
	if n := memoBuilds.Load(); n != 1 {
		t.Fatalf("%d builds for three rule sets with the same rules, want 1 (shared)", n)
	}
	first.Close()
	third := build()
	third.Close()
	if n := memoBuilds.Load(); n != 1 {
		t.Fatalf("closing one rule set dropped the entry another still holds (%d builds)", n)
	}
	second.Close()
	build().Close()
	if n := memoBuilds.Load(); n != 2 {
		t.Fatalf("%d builds after every holder closed, want 2: the entry was kept", n)
	}
	// A closed rule set never builds its twin: it would be a rule set
	// nobody closes.
	if _, err := third.DetectOnly(); !errors.Is(err, errClosed) {
		t.Errorf("DetectOnly after Close: %v, want errClosed", err)
	}
}
