package sweep

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// The default sweep as it ran on this project's 2-core VM (the short
// profile at full CRS: 8 configurations, then Envoy's baselines): the
// steps each configuration took, 9.2 s a step and 2 s to deploy each. From
// the first step on, the estimate must be within 25% of the time that was
// actually left, or half a minute near the end, where the one unknown is
// whether the configuration's last step was its last.
func TestProgressEstimatesTheDefaultSweep(t *testing.T) {
	p := plan.Default()
	p.Flavors = []string{plan.FlavorDirect, plan.FlavorEnvoy, plan.FlavorWAF, plan.FlavorWAFAccelerated}
	p.Tiers, p.Shapes, p.Ladder = []string{plan.TierFullCRS}, []string{plan.ShapeGet, plan.ShapeJSON1K}, []int{1000, 3000, 10000}
	p.SLOs = []time.Duration{50 * time.Millisecond}
	type run struct {
		cfg   plan.Config
		steps int
		kind  string
	}
	cfg := func(flavor, shape string) plan.Config {
		tier := plan.TierFullCRS
		if !plan.HasWAF(flavor) {
			tier = plan.TierNone
		}
		return plan.Config{Flavor: flavor, Tier: tier, Shape: shape}
	}
	var runs []run
	for _, c := range p.ConfigsForRound(0) {
		steps := map[string]int{"waf/full-crs/get": 19, "waf/full-crs/json_1k": 15, "waf-accelerated/full-crs/get": 18, "waf-accelerated/full-crs/json_1k": 17}[c.ID()]
		if steps == 0 {
			steps = 3 // the ladder, passed to its top
		}
		runs = append(runs, run{c, steps, string(knee.KindBisect)})
	}
	runs = append(runs, run{cfg(plan.FlavorEnvoy, plan.ShapeGet), 4, dataset.KindBaseline}, run{cfg(plan.FlavorEnvoy, plan.ShapeJSON1K), 4, dataset.KindBaseline})

	const deploy, step = 2 * time.Second, 9200 * time.Millisecond
	var ends []time.Duration // each step's end, from the start
	var at time.Duration
	for _, r := range runs {
		at += deploy
		for range r.steps {
			at += step
			ends = append(ends, at)
		}
	}
	total := at

	start := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	clock := start
	var out bytes.Buffer
	pr := newProgressAt(p, nil, &out, func() time.Time { return clock })
	i := 0
	for _, r := range runs {
		for range r.steps {
			clock = start.Add(ends[i])
			i++
			pr.stepDone(r.cfg, dataset.StepRow{ConfigID: r.cfg.ID(), Kind: r.kind, TargetRPS: 1000})
			truth := total - ends[i-1]
			if eta, allowed := pr.eta(), max(truth/4, 30*time.Second); eta < truth-allowed || eta > truth+allowed {
				t.Errorf("after step %d (%s): ETA %s, %s were left", i, r.cfg.ID(), eta.Round(time.Second), truth.Round(time.Second))
			}
		}
	}
	if eta := pr.eta(); eta != 0 {
		t.Errorf("ETA %s after the last step, want 0", eta)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "[8/8 configs,") {
		t.Errorf("last line %q: want it to count the 8 configurations (baselines are none)", last)
	}
}

// A configuration that runs past what its class took is given more, not
// "0s": an eighth of the steps it has taken.
func TestProgressNeverPromisesTheEndOfALongConfiguration(t *testing.T) {
	p := plan.Default()
	p.Flavors, p.Tiers, p.Shapes, p.SLOs = []string{plan.FlavorWAF}, []string{plan.TierFullCRS}, []string{plan.ShapeGet}, nil
	start := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	clock := start
	pr := newProgressAt(p, nil, io.Discard, func() time.Time { return clock })
	waf := plan.Config{Flavor: plan.FlavorWAF, Tier: plan.TierFullCRS, Shape: plan.ShapeGet}
	for i := 1; i <= 20; i++ {
		clock = start.Add(time.Duration(i) * 10 * time.Second)
		pr.stepDone(waf, dataset.StepRow{ConfigID: waf.ID(), Kind: string(knee.KindBisect)})
	}
	if got, want := pr.eta(), 3*10*time.Second; got != want {
		t.Errorf("20 steps into a configuration guessed at 10: ETA %s, want %s (3 steps more)", got, want)
	}
}
