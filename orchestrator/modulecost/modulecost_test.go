package modulecost

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

func step(flavor, tier string, round int, usPerReq float64, verdict string) dataset.StepRow {
	c := plan.Config{Flavor: flavor, Tier: tier, Shape: plan.ShapeGet}
	return dataset.StepRow{ConfigID: c.ID(), Flavor: flavor, Tier: tier, Shape: plan.ShapeGet, Round: round,
		Kind: "ladder", TargetRPS: 500, CoresPer1k: usPerReq / 1000, Verdict: verdict}
}

var engine = []EngineCost{
	{Tier: plan.TierModuleOff, Shape: plan.ShapeGet, Flavor: "stock", CPUNs: 400},
	{Tier: plan.TierHeadersOnly, Shape: plan.ShapeGet, Flavor: "stock", CPUNs: 8000},
	{Tier: plan.TierHeadersOnly, Shape: plan.ShapeGet, Flavor: "accelerated", CPUNs: 1},
}

func TestTableComparesEachRoundWithItsOwnEnvoy(t *testing.T) {
	pass := dataset.VerdictPass
	steps := []dataset.StepRow{
		step(plan.FlavorWAF, plan.TierHeadersOnly, 0, 300, pass),
		step(plan.FlavorEnvoy, plan.TierNone, 0, 200, pass),
		step(plan.FlavorWAF, plan.TierModuleOff, 0, 230, pass),
		step(plan.FlavorEnvoyNoopModule, plan.TierNone, 0, 205, pass),
		step(plan.FlavorEnvoyNoopModule, plan.TierNone, 1, 183, pass),
		step(plan.FlavorEnvoy, plan.TierNone, 1, 180, pass),
		step(plan.FlavorWAF, plan.TierHeadersOnly, 1, 290, pass),
		step(plan.FlavorWAF, plan.TierModuleOff, 1, 999, dataset.VerdictInvalid), // retried
		step(plan.FlavorWAF, plan.TierModuleOff, 1, 190, pass),
		step(plan.FlavorEnvoy, plan.TierNone, 2, 190, pass),
		step(plan.FlavorWAF, plan.TierHeadersOnly, 2, 310, pass),
		step(plan.FlavorWAF, plan.TierModuleOff, 2, 200, pass),
		step(plan.FlavorEnvoyNoopModule, plan.TierNone, 2, 194, pass),
	}
	rows, err := Table(steps, engine)
	if err == nil || !strings.Contains(err.Error(), "waf/targeted: no passing step at 500 RPS") {
		t.Errorf("error %v, want the missing tiers named", err)
	}
	want := []struct {
		flavor, tier     string
		proxy, over, gap float64
	}{
		{plan.FlavorEnvoy, plan.TierNone, 190, math.NaN(), math.NaN()},
		{plan.FlavorEnvoyNoopModule, plan.TierNone, 194, 4, math.NaN()}, // rounds: +5, +3, +4; no engine of its own
		{plan.FlavorWAF, plan.TierModuleOff, 200, 10, 9.6},              // rounds: +30, +10, +10
		{plan.FlavorWAF, plan.TierHeadersOnly, 300, 110, 102},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		r := rows[i]
		if r.Flavor != w.flavor || r.Tier != w.tier || r.Rounds != 3 || !near(r.Proxy.Median, w.proxy) || !near(r.OverEnvoy.Median, w.over) || !near(r.Gap, w.gap) {
			t.Errorf("row %d: %+v, want %s/%s, 3 rounds, proxy %v, over Envoy %v, gap %v", i, r, w.flavor, w.tier, w.proxy, w.over, w.gap)
		}
	}
	if r := rows[2]; r.OverEnvoy.Min != 10 || r.OverEnvoy.Max != 30 {
		t.Errorf("module-off spread %+v, want 10..30", r.OverEnvoy)
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if lines[0] != strings.Join(Header, ",") || lines[2] != "envoy-noop-module,none,500,3,194.0,183.0,205.0,4.0,3.0,5.0,," ||
		lines[3] != "waf,module-off,500,3,200.0,190.0,230.0,10.0,10.0,30.0,0.4,9.6" {
		t.Errorf("CSV:\n%s", b.String())
	}
}

func TestTableRefusesWhatItCannotCompare(t *testing.T) {
	pass := dataset.VerdictPass
	atRate := func(s dataset.StepRow, rate int) dataset.StepRow { s.TargetRPS = rate; return s }
	for _, tc := range []struct {
		name  string
		steps []dataset.StepRow
		want  string
	}{
		{"no Envoy", []dataset.StepRow{step(plan.FlavorWAF, plan.TierHeadersOnly, 0, 300, pass)}, "no passing vanilla Envoy step"},
		{"two rates", []dataset.StepRow{step(plan.FlavorEnvoy, plan.TierNone, 0, 200, pass), atRate(step(plan.FlavorWAF, plan.TierHeadersOnly, 0, 300, pass), 1000)}, "one rate"},
		{"no no-op module", []dataset.StepRow{step(plan.FlavorEnvoy, plan.TierNone, 0, 200, pass), step(plan.FlavorWAF, plan.TierHeadersOnly, 0, 300, pass)}, "envoy-noop-module: no passing step at 500 RPS"},
		{"no engine figure", []dataset.StepRow{step(plan.FlavorEnvoy, plan.TierNone, 0, 200, pass), step(plan.FlavorWAF, plan.TierFullCRS, 0, 900, pass)}, "no engine figure for tier full-crs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Table(tc.steps, engine)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestPlanIsValidAndFixedRate(t *testing.T) {
	p := Plan(DefaultRate)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(p.Ladder) != 1 || p.Ladder[0] != DefaultRate || len(p.SLOs) != 0 || p.Confirm || p.Rounds < 3 {
		t.Errorf("plan %+v: want one rung at %d, no SLO search, no confirmation, 3 rounds", p, DefaultRate)
	}
}

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) < 1e-9
}
