package dataset

import (
	"math"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// CostModel is a configuration's CPU as a straight line in its served
// rate, fitted by least squares over its passing steps:
//
//	cores = IdleCores + CoresPer1k * served RPS / 1000
//
// Cores per 1k RPS at one rate (StepRow.CoresPer1k) mixes the two terms:
// vanilla Envoy's GET read 0.178 at 1,000 RPS and 0.08 at 10,000, so
// sizing from the figure at the knee under-sizes lower rates by about 2x.
// The line carries both, and RMSECores says how far the steps lie from it
// (the regression's standard error, in cores). IdleCores is the line's
// value at rate 0: the cost of being busy at all (timers, wake-ups), which
// is more than the idle CPU measured before the steps.
type CostModel struct {
	IdleCores, CoresPer1k, RMSECores float64
	// Steps counts the steps fitted; LowRPS and HighRPS are the lowest
	// and highest rates among them: the range the line was fitted on.
	Steps           int
	LowRPS, HighRPS int
}

// minCostSteps is the fewest steps a line is fitted to: two points always
// fit one exactly, and say nothing of the error.
const minCostSteps = 3

// noCostModel is a configuration without enough passing steps.
func noCostModel() CostModel {
	nan := math.NaN()
	return CostModel{IdleCores: nan, CoresPer1k: nan, RMSECores: nan}
}

// FitCost fits the cost model to the passing steps among rows (of one
// configuration, any search and round): the proxy's CPU over each window,
// or for the direct flavor the backend's, against the rate it served
// there. Fewer than three such steps, or fewer than two rates, fit no line
// (NaN figures, with the count); nor does a line whose slope is not
// positive, since every request costs something.
func FitCost(rows []StepRow) CostModel {
	var xs, ys []float64
	m := noCostModel()
	for _, r := range rows {
		cpu := r.ProxyCPUS
		if r.Flavor == plan.FlavorDirect {
			cpu = r.BackendCPUS
		}
		served := r.ServedRPS()
		if r.Verdict != VerdictPass || !(r.WindowS > 0) || math.IsNaN(cpu) || !(served > 0) {
			continue
		}
		xs, ys = append(xs, served/1000), append(ys, cpu/r.WindowS)
		m.LowRPS = lowerPositive(m.LowRPS, r.TargetRPS)
		m.HighRPS = max(m.HighRPS, r.TargetRPS)
	}
	m.Steps = len(xs)
	// One target rate is no line, however the served rates scatter about
	// it: a fit through that scatter gave vanilla Envoy -109 idle cores
	// and 273 cores per 1k RPS from three steps at 400 RPS.
	if len(xs) < minCostSteps || m.LowRPS == m.HighRPS {
		return m
	}
	slope, intercept, ok := leastSquares(xs, ys)
	if !ok || !(slope > 0) {
		return m
	}
	var sse float64
	for i := range xs {
		e := ys[i] - (intercept + slope*xs[i])
		sse += e * e
	}
	m.IdleCores, m.CoresPer1k = intercept, slope
	m.RMSECores = math.Sqrt(sse / float64(len(xs)-2))
	return m
}

// Cores is the model's CPU at rps, NaN without a line.
func (m CostModel) Cores(rps float64) float64 {
	return m.IdleCores + m.CoresPer1k*rps/1000
}

// leastSquares is the ordinary least-squares line through (xs, ys); not
// ok when the xs are all equal.
func leastSquares(xs, ys []float64) (slope, intercept float64, ok bool) {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i], my+ys[i]
	}
	mx, my = mx/n, my/n
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	if sxx == 0 {
		return 0, 0, false
	}
	slope = sxy / sxx
	return slope, my - slope*mx, true
}
