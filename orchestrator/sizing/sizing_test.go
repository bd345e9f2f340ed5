package sizing

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
)

// sweepOf is a one-configuration sweep of three rounds on one proxy CPU,
// with SLO knees at 10 and 50 ms and a cost line of 0.1 idle cores and
// 0.7 cores per 1k RPS fitted between 100 and 1300 RPS.
func sweepOf() dataset.Sweep {
	const id = "waf/full-crs/get"
	slo := func(ms float64, knee, lo, hi int) dataset.SLOKneeRow {
		return dataset.SLOKneeRow{Round: dataset.AllRounds, Rounds: 3, ConfigID: id, SLOMs: ms, KneeRPS: knee,
			Status: dataset.SLOSearched, CallsAtKnee: 20000, KneeMinRPS: float64(lo), KneeMaxRPS: float64(hi)}
	}
	var sw dataset.Sweep
	sw.Meta.CPUModel, sw.Meta.CoreAssignment = "Test CPU", map[string]string{"proxy": "1", "loadgen": "0"}
	sw.SLOKnees = []dataset.SLOKneeRow{slo(10, 400, 400, 400), slo(50, 1160, 890, 1250),
		{Round: 0, ConfigID: id, SLOMs: 50, KneeRPS: 5000}} // a round row: never planned on
	sw.Knees = []dataset.KneeRow{{Round: dataset.AllRounds, ConfigID: id, KneeRPS: 1220,
		Cost: dataset.CostModel{IdleCores: 0.1, CoresPer1k: 0.7, RMSECores: 0.02, Steps: 30, LowRPS: 100, HighRPS: 1300}}}
	return sw
}

func TestSize(t *testing.T) {
	tests := []struct {
		name        string
		req         Request
		objectiveMs float64
		measured    int
		instances   int
		usedCores   float64
		outsideFit  bool
	}{
		// 5000 / (890 x 0.8 = 712) = 7.02: 8 instances at 625 RPS, each
		// 0.1 + 0.7 x 0.625 cores.
		{"the rounds' low end, less the headroom", Request{ConfigID: "waf/full-crs/get", RPS: 5000, P99: 50 * time.Millisecond, Headroom: 0.2},
			50, 890, 8, 8 * (0.1 + 0.7*0.625), false},
		{"the loosest objective within the request's", Request{ConfigID: "waf/full-crs/get", RPS: 800, P99: 30 * time.Millisecond},
			10, 400, 2, 2 * (0.1 + 0.7*0.4), false},
		{"a rate each below the fitted ones", Request{ConfigID: "waf/full-crs/get", RPS: 50, P99: time.Second},
			50, 890, 1, 0.1 + 0.7*0.05, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Size(sweepOf(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if a.ObjectiveMs != tc.objectiveMs || a.MeasuredRPS != tc.measured || a.Instances != tc.instances ||
				math.Abs(a.UsedCores-tc.usedCores) > 1e-9 || a.OutsideFit != tc.outsideFit || a.ReservedCores != float64(tc.instances) {
				t.Errorf("answer %+v; want objective %v ms, %d RPS measured, %d instances (as many CPUs), %.4f cores used, outside the fit %v",
					a, tc.objectiveMs, tc.measured, tc.instances, tc.usedCores, tc.outsideFit)
			}
		})
	}
}

func TestSizeRefuses(t *testing.T) {
	notMet := sweepOf()
	notMet.SLOKnees[0].KneeRPS, notMet.SLOKnees[0].Status = 0, dataset.SLOBelowFloor
	tests := []struct {
		name string
		sw   dataset.Sweep
		req  Request
		want string
	}{
		{"a configuration the sweep lacks", sweepOf(), Request{ConfigID: "envoy/none/get", RPS: 1, P99: time.Second}, `"envoy/none/get" has no SLO knee in this sweep; it has: waf/full-crs/get`},
		{"an objective tighter than any searched", sweepOf(), Request{ConfigID: "waf/full-crs/get", RPS: 1, P99: 5 * time.Millisecond}, "no objective at or under 5ms was searched"},
		{"an objective met at no rate", notMet, Request{ConfigID: "waf/full-crs/get", RPS: 1, P99: 20 * time.Millisecond}, "met p99 <= 10 ms at no rate"},
		{"no rate", sweepOf(), Request{ConfigID: "waf/full-crs/get", P99: time.Second}, "want a positive RPS"},
		{"a headroom of everything", sweepOf(), Request{ConfigID: "waf/full-crs/get", RPS: 1, P99: time.Second, Headroom: 1}, "headroom 1: want a share in [0, 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Size(tc.sw, tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// The committed reference GET slice answers with its own figures: the
// accelerated build's 50 ms knee over three rounds (890-1250 RPS) on one
// CPU of an AMD EPYC.
func TestSizeFromACommittedSweep(t *testing.T) {
	sw, err := dataset.ReadSweep("../../results/reference-get")
	if err != nil {
		t.Fatal(err)
	}
	a, err := Size(sw, Request{ConfigID: "waf-accelerated/full-crs/get", RPS: 5000, P99: 50 * time.Millisecond, Headroom: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if a.MeasuredRPS != 890 || a.Instances != 8 || a.ProxyCores != 1 || !(a.UsedCores > 0 && a.UsedCores < a.ReservedCores) {
		t.Errorf("answer %+v: want 890 RPS an instance, 8 instances of 1 CPU, using less than they reserve", a)
	}
}
