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
}

// The listener's detect-only twin exists once NewEngine returns, before any
// stream asks for it: no worker ever builds a rule set. Rule sets of routes
// have none, and say so.
func TestDetectTwinIsBuiltAtLoad(t *testing.T) {
	cfg := tierConfig(t, "targeted")
	e := mustEngine(t, cfg)
	defer e.Close()
	if e.detect == nil || e.detect.Mode() != ModeDetect {
		t.Fatalf("after NewEngine: twin %+v, want a detect-mode engine already built", e.detect)
	}
	twin, err := e.DetectOnly()
	if err != nil || twin != e.detect {
		t.Fatalf("DetectOnly = %p, %v; want the twin built at load (%p)", twin, err, e.detect)
	}
	s := NewStream(&cfg, twin, nil)
	if d := s.OnRequestHeaders(get("/search?q=1%27%20union%20select%20password%20from%20users--")); d.Action == Reply {
		t.Fatalf("the detect-only twin blocked: %+v", d)
	}
	if out := s.Complete(); out.Detected == nil {
		t.Fatal("the detect-only twin did not record the would-be block")
	}

	detectCfg := cfg
	detectCfg.Mode = ModeDetect
	d := mustEngine(t, detectCfg)
	defer d.Close()
	if twin, err := d.DetectOnly(); err != nil || twin != d {
		t.Fatalf("a detect-mode engine's twin is itself: got %p, %v", twin, err)
	}

	r, err := NewRoute(RouteConfig{Mode: ModeBlock, Directives: cfg.Directives, Acceleration: defaultAcceleration}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.engine.DetectOnly(); !errors.Is(err, errNoDetectTwin) {
		t.Fatalf("DetectOnly of a route's rule set: %v, want errNoDetectTwin", err)
	}
}
