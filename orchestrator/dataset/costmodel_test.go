package dataset

import (
	"math"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// costStep is a 10 s step at rps that served every call and used cores.
func costStep(flavor string, rps int, cores float64, verdict string) StepRow {
	r := StepRow{Flavor: flavor, TargetRPS: rps, WindowS: 10, Completed: int64(rps) * 10, Verdict: verdict,
		ProxyCPUS: cores * 10, BackendCPUS: math.NaN()}
	if flavor == plan.FlavorDirect {
		r.ProxyCPUS, r.BackendCPUS = math.NaN(), cores*10
	}
	return r
}

// served sets a step's completed calls.
func served(r StepRow, completed int64) StepRow {
	r.Completed = completed
	return r
}

func TestFitCost(t *testing.T) {
	envoy := func(rps int, cores float64) StepRow { return costStep(plan.FlavorEnvoy, rps, cores, VerdictPass) }
	tests := []struct {
		name                   string
		rows                   []StepRow
		idle, per1k, rmse      float64 // NaN: no line
		steps, lowRPS, highRPS int
	}{
		// Vanilla Envoy's GET, as the reference slices read it: 0.178
		// cores per 1k RPS at 1,000 RPS, 0.08 at 10,000: a fixed cost
		// and a marginal one.
		{"a line through the points", []StepRow{envoy(1000, 0.178), envoy(5500, 0.489), envoy(10000, 0.8)},
			0.10889, 0.06911, 0, 3, 1000, 10000},
		{"scatter about it", []StepRow{envoy(1000, 0.2), envoy(2000, 0.25), envoy(3000, 0.4), envoy(4000, 0.45)},
			0.1, 0.09, math.Sqrt(0.002 / 2), 4, 1000, 4000},
		{"failed and invalid steps left out", []StepRow{envoy(1000, 0.2), envoy(2000, 0.3), envoy(3000, 0.4),
			costStep(plan.FlavorEnvoy, 9000, 1, VerdictFail), costStep(plan.FlavorEnvoy, 8000, 2, VerdictInvalid)},
			0.1, 0.1, 0, 3, 1000, 3000},
		{"direct: the backend's CPU", []StepRow{costStep(plan.FlavorDirect, 100, 0.48, VerdictPass),
			costStep(plan.FlavorDirect, 200, 0.88, VerdictPass), costStep(plan.FlavorDirect, 240, 1.04, VerdictPass)},
			0.08, 4, 0, 3, 100, 240},
		{"two steps fit no line", []StepRow{envoy(1000, 0.2), envoy(2000, 0.3)}, math.NaN(), math.NaN(), math.NaN(), 2, 1000, 2000},
		{"one rate fits no line", []StepRow{envoy(1000, 0.2), envoy(1000, 0.21), envoy(1000, 0.19)}, math.NaN(), math.NaN(), math.NaN(), 3, 1000, 1000},
		// As a fixed-rate sweep reads: one target, served a call or two
		// either side of it.
		{"one target rate, served rates scattered about it", []StepRow{served(envoy(400, 0.142), 3999), served(envoy(400, 0.146), 4000), served(envoy(400, 0.150), 4001)},
			math.NaN(), math.NaN(), math.NaN(), 3, 400, 400},
		{"a falling line is no cost", []StepRow{envoy(1000, 0.4), envoy(2000, 0.3), envoy(3000, 0.2)}, math.NaN(), math.NaN(), math.NaN(), 3, 1000, 3000},
	}
	near := func(got, want float64) bool {
		return math.IsNaN(got) && math.IsNaN(want) || math.Abs(got-want) < 1e-4
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := FitCost(tc.rows)
			if !near(m.IdleCores, tc.idle) || !near(m.CoresPer1k, tc.per1k) || !near(m.RMSECores, tc.rmse) ||
				m.Steps != tc.steps || m.LowRPS != tc.lowRPS || m.HighRPS != tc.highRPS {
				t.Errorf("fit %+v, want idle %v, %v cores per 1k, rmse %v over %d steps at %d-%d RPS",
					m, tc.idle, tc.per1k, tc.rmse, tc.steps, tc.lowRPS, tc.highRPS)
			}
			if !math.IsNaN(tc.idle) && !near(m.Cores(2000), tc.idle+2*tc.per1k) {
				t.Errorf("Cores(2000) = %v", m.Cores(2000))
			}
		})
	}
}
