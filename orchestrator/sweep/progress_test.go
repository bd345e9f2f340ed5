package sweep

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// The estimate follows what configurations took, not the plan's windows:
// a sweep whose first configuration took ten minutes expects the others
// to take about as long.
func TestProgressEstimatesFromFinishedConfigurations(t *testing.T) {
	p := plan.Default()
	p.Flavors, p.Tiers, p.Shapes, p.Rounds = []string{plan.FlavorEnvoy, plan.FlavorWAF}, []string{plan.TierFullCRS}, []string{plan.ShapeGet, plan.ShapeJSON1K}, 1
	start := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	clock := start
	var out bytes.Buffer
	pr := newProgressAt(p, nil, &out, func() time.Time { return clock })
	envoy := plan.Config{Flavor: plan.FlavorEnvoy, Tier: plan.TierNone, Shape: plan.ShapeGet}
	waf := plan.Config{Flavor: plan.FlavorWAF, Tier: plan.TierFullCRS, Shape: plan.ShapeGet}
	step := func(at time.Duration, cfg plan.Config, kind string) string {
		clock = start.Add(at)
		out.Reset()
		pr.stepDone(cfg, dataset.StepRow{ConfigID: cfg.ID(), Kind: kind, TargetRPS: 1000})
		return out.String()
	}
	tests := []struct {
		at   time.Duration
		cfg  plan.Config
		kind string
		want string
	}{
		// Before any configuration finished: the plan's guess, ten steps
		// of 27 s for each of the four configurations.
		{30 * time.Second, envoy, string(knee.KindLadder), "[1/4 configs, 30s elapsed, ETA 18m0s]"},
		{5 * time.Minute, envoy, string(knee.KindLadder), "[1/4 configs, 5m0s elapsed, ETA 13m30s]"},
		// Envoy took 10 minutes (its first step's end to the next one's):
		// two more like it and the rest of this one.
		{10*time.Minute + 30*time.Second, waf, string(knee.KindLadder), "[2/4 configs, 10m30s elapsed, ETA 30m0s]"},
		{15*time.Minute + 30*time.Second, waf, string(knee.KindBisect), "[2/4 configs, 15m30s elapsed, ETA 25m0s]"},
		// A baseline of Envoy after the searches is not a configuration.
		{16 * time.Minute, envoy, dataset.KindBaseline, "[2/4 configs, 16m0s elapsed, ETA 24m30s]"},
	}
	for _, tt := range tests {
		if got := step(tt.at, tt.cfg, tt.kind); !strings.HasPrefix(got, tt.want) {
			t.Errorf("at %s: %q, want it to start with %q", tt.at, got, tt.want)
		}
	}
}
