// Package sizing answers a planner's question from a sweep's dataset: how
// many proxy instances, and how many cores, carry R RPS of one
// configuration's traffic within a p99 objective.
//
// Each instance is planned at the low end of the objective's SLO knee over
// the sweep's rounds (the rate every round met it at), less a headroom the
// planner chooses; the instances' CPU comes from the configuration's cost
// model (dataset.CostModel) at the rate each then carries. The answer is
// for the machine the sweep ran on, with the proxy on the CPUs it had
// there: another processor needs its own sweep.
package sizing

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// Request is what a planner asks.
type Request struct {
	ConfigID string        // a configuration of the sweep, e.g. waf-accelerated/full-crs/get
	RPS      float64       // the traffic to carry
	P99      time.Duration // the objective it must meet
	// Headroom is the share of each instance's measured rate kept free
	// (for spikes, a slower neighbour, a lost instance's share), in [0, 1).
	Headroom float64
}

// Validate says what is wrong with the request, before any data is read.
func (r Request) Validate() error {
	var errs []error
	if r.ConfigID == "" {
		errs = append(errs, errors.New("no configuration named"))
	}
	if !(r.RPS > 0) {
		errs = append(errs, fmt.Errorf("rate %v: want a positive RPS", r.RPS))
	}
	if r.P99 <= 0 {
		errs = append(errs, fmt.Errorf("p99 objective %v: want a positive duration", r.P99))
	}
	if !(r.Headroom >= 0 && r.Headroom < 1) {
		errs = append(errs, fmt.Errorf("headroom %v: want a share in [0, 1)", r.Headroom))
	}
	return errors.Join(errs...)
}

// Answer is the sizing of one request.
type Answer struct {
	Request Request
	// ObjectiveMs is the objective the plan rests on: the loosest one the
	// sweep searched that is at most the request's.
	ObjectiveMs float64
	// MeasuredRPS is the SLO knee's low end over the rounds, PlannedRPS
	// what each instance is planned at after the headroom.
	MeasuredRPS int
	PlannedRPS  float64
	Instances   int
	// ProxyCores is what one instance had in the sweep; ReservedCores is
	// Instances times that.
	ProxyCores, ReservedCores float64
	// UsedCores is the cost model's CPU of all instances at the rate
	// each carries (NaN without a cost line); OutsideFit marks a rate
	// outside the rates the line was fitted on.
	UsedCores  float64
	OutsideFit bool
	Machine    string
	// Notes are what the planner should know besides the figures.
	Notes []string
}

// Size answers req from the sweep.
func Size(sw dataset.Sweep, req Request) (Answer, error) {
	if err := req.Validate(); err != nil {
		return Answer{}, err
	}
	slo, err := objectiveRow(sw.SLOKnees, req)
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Request: req, ObjectiveMs: slo.SLOMs, Machine: sw.Meta.CPUModel, UsedCores: math.NaN()}
	a.MeasuredRPS = slo.KneeRPS
	if slo.Rounds > 1 && slo.KneeMinRPS > 0 && int(slo.KneeMinRPS) < a.MeasuredRPS {
		a.MeasuredRPS = int(slo.KneeMinRPS)
		a.Notes = append(a.Notes, fmt.Sprintf("planned at the lowest of %d rounds' rates (%d-%d RPS), not their median %d",
			slo.Rounds, int(slo.KneeMinRPS), int(slo.KneeMaxRPS), slo.KneeRPS))
	}
	if slo.ThinP99() {
		a.Notes = append(a.Notes, fmt.Sprintf("the p99 at that rate was read from %d calls only: a few slow calls decide it", slo.CallsAtKnee))
	}
	if slo.Status == dataset.SLOContested {
		a.Notes = append(a.Notes, "another run at that rate was over the objective (at_bound_contested): plan lower")
	}
	a.PlannedRPS = float64(a.MeasuredRPS) * (1 - req.Headroom)
	a.Instances = int(math.Ceil(req.RPS / a.PlannedRPS))
	a.ProxyCores = proxyCores(sw.Meta)
	a.ReservedCores = float64(a.Instances) * a.ProxyCores
	if k, ok := allRounds(sw.Knees, req.ConfigID); ok && k.Cost.Steps > 0 && !math.IsNaN(k.Cost.CoresPer1k) {
		each := req.RPS / float64(a.Instances)
		a.UsedCores = float64(a.Instances) * k.Cost.Cores(each)
		a.OutsideFit = each < float64(k.Cost.LowRPS) || each > float64(k.Cost.HighRPS)
	}
	return a, nil
}

// objectiveRow is the aggregate SLO knee of the configuration at the
// loosest objective the sweep searched within the request's.
func objectiveRow(rows []dataset.SLOKneeRow, req Request) (dataset.SLOKneeRow, error) {
	want := float64(req.P99) / float64(time.Millisecond)
	var ofConfig []dataset.SLOKneeRow
	var configs []string
	for _, r := range rows {
		if r.Round != dataset.AllRounds {
			continue
		}
		configs = append(configs, r.ConfigID)
		if r.ConfigID == req.ConfigID {
			ofConfig = append(ofConfig, r)
		}
	}
	if len(ofConfig) == 0 {
		slices.Sort(configs)
		return dataset.SLOKneeRow{}, fmt.Errorf("configuration %q has no SLO knee in this sweep; it has: %s",
			req.ConfigID, strings.Join(slices.Compact(configs), ", "))
	}
	var best dataset.SLOKneeRow
	var objectives []string
	for _, r := range ofConfig {
		objectives = append(objectives, strconv.FormatFloat(r.SLOMs, 'f', -1, 64)+" ms")
		if r.SLOMs <= want && r.SLOMs > best.SLOMs {
			best = r
		}
	}
	switch {
	case best.SLOMs == 0:
		return best, fmt.Errorf("no objective at or under %v was searched for %s (searched: %s): sweep it with --slo",
			req.P99, req.ConfigID, strings.Join(objectives, ", "))
	case best.KneeRPS <= 0:
		return best, fmt.Errorf("%s met p99 <= %g ms at no rate the sweep tried (%s): nothing to plan on",
			req.ConfigID, best.SLOMs, best.Status)
	}
	return best, nil
}

func allRounds(knees []dataset.KneeRow, configID string) (dataset.KneeRow, bool) {
	i := slices.IndexFunc(knees, func(k dataset.KneeRow) bool { return k.ConfigID == configID && k.Round == dataset.AllRounds })
	if i < 0 {
		return dataset.KneeRow{}, false
	}
	return knees[i], true
}

// proxyCores is how many CPUs the sweep gave the proxy: its CPU list on
// the local target; NaN when the metadata does not say.
func proxyCores(meta dataset.Metadata) float64 {
	cpus, err := procstat.ParseCPUList(meta.CoreAssignment["proxy"])
	if err != nil || len(cpus) == 0 {
		return math.NaN()
	}
	return float64(len(cpus))
}
