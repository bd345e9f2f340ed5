package modulecost

import (
	"bytes"
	"fmt"
	"math"
	"slices"
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
	rows, err := Table([][]dataset.StepRow{steps}, engine)
	if err == nil || !strings.Contains(err.Error(), "waf/targeted: no passing step") {
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
		{"no Envoy", []dataset.StepRow{step(plan.FlavorWAF, plan.TierHeadersOnly, 0, 300, pass)}, "a sweep without a passing vanilla Envoy step"},
		{"two rates in one sweep", []dataset.StepRow{step(plan.FlavorEnvoy, plan.TierNone, 0, 200, pass), atRate(step(plan.FlavorWAF, plan.TierHeadersOnly, 0, 300, pass), 1000)}, "each sweep compares one rate"},
		{"no no-op module", []dataset.StepRow{step(plan.FlavorEnvoy, plan.TierNone, 0, 200, pass), step(plan.FlavorWAF, plan.TierHeadersOnly, 0, 300, pass)}, "envoy-noop-module: no passing step"},
		{"no engine figure", []dataset.StepRow{step(plan.FlavorEnvoy, plan.TierNone, 0, 200, pass), step(plan.FlavorWAF, plan.TierFullCRS, 0, 900, pass)}, "no engine figure for tier full-crs (stock, get)"},
		{"no accelerated engine figure", []dataset.StepRow{step(plan.FlavorEnvoy, plan.TierNone, 0, 200, pass), step(plan.FlavorWAFAccelerated, plan.TierModuleOff, 0, 300, pass)}, "no engine figure for tier module-off (accelerated, get)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Table([][]dataset.StepRow{tc.steps}, engine)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// Each sweep is compared with its own vanilla Envoy: full CRS at its rate
// with Envoy at that rate, not with the light sweep's Envoy at another.
func TestTableComparesEachSweepWithItsOwnEnvoy(t *testing.T) {
	pass := dataset.VerdictPass
	atRate := func(s dataset.StepRow, rate int) dataset.StepRow { s.TargetRPS = rate; return s }
	light := []dataset.StepRow{
		atRate(step(plan.FlavorEnvoy, plan.TierNone, 0, 100, pass), 4000),
		atRate(step(plan.FlavorEnvoyNoopModule, plan.TierNone, 0, 104, pass), 4000),
		atRate(step(plan.FlavorWAF, plan.TierModuleOff, 0, 110, pass), 4000),
		atRate(step(plan.FlavorWAF, plan.TierHeadersOnly, 0, 150, pass), 4000),
		atRate(step(plan.FlavorWAF, plan.TierTargeted, 0, 160, pass), 4000),
	}
	full := []dataset.StepRow{
		atRate(step(plan.FlavorWAF, plan.TierFullCRS, 0, 900, pass), 800),
		atRate(step(plan.FlavorEnvoy, plan.TierNone, 0, 180, pass), 800),
		atRate(step(plan.FlavorWAFAccelerated, plan.TierFullCRS, 0, 700, pass), 800),
	}
	withFullCRS := append(slices.Clone(engine),
		EngineCost{Tier: plan.TierTargeted, Shape: plan.ShapeGet, Flavor: "stock", CPUNs: 9000},
		EngineCost{Tier: plan.TierFullCRS, Shape: plan.ShapeGet, Flavor: "stock", CPUNs: 600000},
		EngineCost{Tier: plan.TierFullCRS, Shape: plan.ShapeGet, Flavor: "accelerated", CPUNs: 250000})
	rows, err := Table([][]dataset.StepRow{full, light}, withFullCRS)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s/%s@%d:%g", r.Flavor, r.Tier, r.RateRPS, r.OverEnvoy.Median))
	}
	want := []string{"envoy/none@4000:NaN", "envoy-noop-module/none@4000:4", "waf/module-off@4000:10", "waf/headers-only@4000:50",
		"waf/targeted@4000:60", "envoy/none@800:NaN", "waf/full-crs@800:720", "waf-accelerated/full-crs@800:520"}
	if !slices.Equal(got, want) {
		t.Errorf("rows %v,\nwant %v", got, want)
	}
	// Each module flavor beside its own engine: stock Coraza's, the
	// accelerated build's.
	if r := rows[len(rows)-2]; !near(r.Gap, 120) {
		t.Errorf("full CRS gap %v, want 720 - 600", r.Gap)
	}
	if r := rows[len(rows)-1]; !near(r.Engine, 250) || !near(r.Gap, 270) {
		t.Errorf("accelerated full CRS engine %v, gap %v, want 250 and 520 - 250", r.Engine, r.Gap)
	}
}

func TestPlansAreValidAndFixedRate(t *testing.T) {
	for _, tc := range []struct {
		p     plan.Plan
		rate  int
		tiers []string
	}{
		{LightPlan(), LightRate, LightTiers},
		{FullCRSPlan(), FullCRSRate, []string{plan.TierFullCRS}},
	} {
		if err := tc.p.Validate(); err != nil {
			t.Fatal(err)
		}
		if len(tc.p.Ladder) != 1 || tc.p.Ladder[0] != tc.rate || len(tc.p.SLOs) != 0 || tc.p.Confirm || tc.p.Rounds < 3 ||
			!slices.Equal(tc.p.Tiers, tc.tiers) || !slices.Contains(tc.p.Flavors, plan.FlavorEnvoy) {
			t.Errorf("plan %+v: want vanilla Envoy and tiers %v at one rung of %d, no SLO search, no confirmation, 3 rounds", tc.p, tc.tiers, tc.rate)
		}
	}
}

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) < 1e-9
}
