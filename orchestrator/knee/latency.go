package knee

import (
	"cmp"
	"math"
	"slices"
)

// LatencyPoint is one measured step seen from the latency side.
type LatencyPoint struct {
	Target int
	P99Ms  float64
	Passed bool // the step passed the throughput test (Step.Passed)
}

// LatencyKnee is the highest target whose step passed and whose p99 is within
// sloMs, provided every lower target also passed within the SLO: latency
// that breaks the SLO at a lower rate is not forgiven by a lucky run above
// it. A target measured more than once (confirm, retry, rounds) counts only
// if every run of it is within. Invalid steps must be left out by the caller.
// ok is false when the lowest target already misses.
func LatencyKnee(points []LatencyPoint, sloMs float64) (knee int, ok bool) {
	sorted := slices.Clone(points)
	slices.SortStableFunc(sorted, func(a, b LatencyPoint) int { return cmp.Compare(a.Target, b.Target) })
	for i := 0; i < len(sorted); {
		target := sorted[i].Target
		for ; i < len(sorted) && sorted[i].Target == target; i++ {
			if !sorted[i].within(sloMs) {
				return knee, ok
			}
		}
		knee, ok = target, true
	}
	return knee, ok
}

// within is false for a NaN p99 (latency not measured).
func (p LatencyPoint) within(sloMs float64) bool {
	return p.Passed && !math.IsNaN(p.P99Ms) && p.P99Ms <= sloMs
}
