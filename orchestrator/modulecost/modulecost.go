// Package modulecost measures what the corazawaf module costs Envoy per
// request, beside what the same tier costs the filter's own glue without
// Envoy (filter/accel/enginebench). Plan is the sweep that measures it:
// vanilla Envoy, Envoy with a module that does nothing (filter/noopmodule),
// and Envoy with corazawaf in each tier, one fixed rate, the GET shape,
// rounds in alternating order. Table turns the sweep's steps and the engine
// figures into results/bench/module.csv: per configuration the proxy CPU
// per request and its difference with vanilla Envoy's step of the same
// round; per corazawaf tier also the engine's own cost and the gap between
// the two, which is what the module spends around Coraza. The no-op
// module's difference is Envoy's share of that gap: what any module costs.
package modulecost

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// DefaultRate is the fixed rate: a sixth of a core's worth of vanilla
// Envoy, and about half a core of full CRS GETs, so that every tier is far
// below its knee on one proxy core.
const DefaultRate = 500

// Tiers are the module's configurations, from nothing inspected to the
// full CRS.
var Tiers = []string{plan.TierModuleOff, plan.TierHeadersOnly, plan.TierTargeted, plan.TierFullCRS}

// Plan is the fixed-rate sweep: every step at rate, no knee search above
// it, no SLO searches, three rounds of 20 s windows.
func Plan(rate int) plan.Plan {
	p := plan.Default()
	p.Flavors = []string{plan.FlavorEnvoy, plan.FlavorEnvoyNoopModule, plan.FlavorWAF}
	p.Tiers = slices.Clone(Tiers)
	p.Shapes = []string{plan.ShapeGet}
	p.Ladder = []int{rate}
	p.FloorRPS = 0
	p.SLOs = nil
	p.Confirm = false // one rung, no knee to confirm
	p.Rounds = 3
	p.Warmup, p.Measure, p.Cooldown = 5*time.Second, 20*time.Second, 2*time.Second
	return p
}

// EngineCost is one row of enginebench's CSV.
type EngineCost struct {
	Tier, Shape, Flavor string
	CPUNs               float64
}

// ReadEngineCSV reads enginebench's CSV.
func ReadEngineCSV(path string) ([]EngineCost, error) {
	rows, err := dataset.ReadRecords(path, "tier", "shape", "flavor", "cpu_ns_per_req")
	if err != nil {
		return nil, err
	}
	out := make([]EngineCost, 0, len(rows))
	for i, r := range rows {
		ns, err := strconv.ParseFloat(r["cpu_ns_per_req"], 64)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: cpu_ns_per_req: %w", path, i+2, err)
		}
		out = append(out, EngineCost{Tier: r["tier"], Shape: r["shape"], Flavor: r["flavor"], CPUNs: ns})
	}
	return out, nil
}

// Spread is a figure over rounds.
type Spread struct{ Median, Min, Max float64 }

func spreadOf(values []float64) Spread {
	if len(values) == 0 {
		return Spread{math.NaN(), math.NaN(), math.NaN()}
	}
	return Spread{dataset.Median(values), slices.Min(values), slices.Max(values)}
}

// Row is one line of module.csv. CPU figures are microseconds per request.
type Row struct {
	Flavor, Tier string
	RateRPS      int
	Rounds       int     // rounds with a valid, passing step
	Proxy        Spread  // the proxy's CPU per request
	OverEnvoy    Spread  // minus vanilla Envoy's in the same round (NaN for Envoy itself)
	Engine       float64 // the tier through the filter's glue without Envoy (NaN when unknown)
	Gap          float64 // OverEnvoy.Median - Engine: what the module spends around Coraza
}

// Table computes the rows from a fixed-rate sweep's steps and the engine
// figures of the same tiers (stock flavor, GET shape). A tier of Tiers
// with no passing step at the rate is an error: its cost would be a guess.
func Table(steps []dataset.StepRow, engine []EngineCost) ([]Row, error) {
	byConfig := map[string]map[int]dataset.StepRow{} // config -> round -> step
	var order []string
	rate := 0
	for _, s := range dataset.CapacitySteps(steps) {
		if s.Verdict != dataset.VerdictPass || s.Shape != plan.ShapeGet {
			continue
		}
		if rate != 0 && s.TargetRPS != rate {
			return nil, fmt.Errorf("steps at %d and %d RPS: a module cost table compares one rate", rate, s.TargetRPS)
		}
		rate = s.TargetRPS
		if byConfig[s.ConfigID] == nil {
			byConfig[s.ConfigID] = map[int]dataset.StepRow{}
			order = append(order, s.ConfigID)
		}
		byConfig[s.ConfigID][s.Round] = s
	}
	envoy := byConfig[plan.Config{Flavor: plan.FlavorEnvoy, Tier: plan.TierNone, Shape: plan.ShapeGet}.ID()]
	if len(envoy) == 0 {
		return nil, errors.New("no passing vanilla Envoy step: nothing to compare the module with")
	}
	var rows []Row
	var errs []error
	for _, id := range order {
		rounds := byConfig[id]
		var config dataset.StepRow // any of the rounds: they name the same configuration
		var proxy, over []float64
		for round, s := range rounds {
			config = s
			us := s.CoresPer1k * 1000
			proxy = append(proxy, us)
			if e, ok := envoy[round]; ok && s.Flavor != plan.FlavorEnvoy {
				over = append(over, us-e.CoresPer1k*1000)
			}
		}
		r := Row{Flavor: config.Flavor, Tier: config.Tier, RateRPS: rate, Rounds: len(rounds),
			Proxy: spreadOf(proxy), OverEnvoy: spreadOf(over), Engine: math.NaN(), Gap: math.NaN()}
		if plan.HasWAF(config.Flavor) {
			if ns, ok := engineCost(engine, config.Tier); ok {
				r.Engine, r.Gap = ns/1000, r.OverEnvoy.Median-ns/1000
			} else {
				errs = append(errs, fmt.Errorf("no engine figure for tier %s (stock, get)", config.Tier))
			}
		}
		rows = append(rows, r)
	}
	if !slices.ContainsFunc(rows, func(r Row) bool { return r.Flavor == plan.FlavorEnvoyNoopModule }) {
		errs = append(errs, fmt.Errorf("%s: no passing step at %d RPS (it splits the module's cost into Envoy's and the module's own)",
			plan.FlavorEnvoyNoopModule, rate))
	}
	for _, tier := range Tiers {
		if !slices.ContainsFunc(rows, func(r Row) bool { return r.Flavor == plan.FlavorWAF && r.Tier == tier }) {
			errs = append(errs, fmt.Errorf("waf/%s: no passing step at %d RPS", tier, rate))
		}
	}
	slices.SortStableFunc(rows, func(a, b Row) int { return tierRank(a) - tierRank(b) })
	return rows, errors.Join(errs...)
}

// tierRank puts vanilla Envoy first, the no-op module next, then the
// tiers in Tiers' order.
func tierRank(r Row) int {
	switch r.Flavor {
	case plan.FlavorEnvoy:
		return -2
	case plan.FlavorEnvoyNoopModule:
		return -1
	}
	if i := slices.Index(Tiers, r.Tier); i >= 0 {
		return i
	}
	return len(Tiers)
}

func engineCost(engine []EngineCost, tier string) (float64, bool) {
	for _, e := range engine {
		if e.Tier == tier && e.Shape == plan.ShapeGet && e.Flavor == "stock" {
			return e.CPUNs, true
		}
	}
	return 0, false
}

// Header is module.csv's first line.
var Header = []string{"flavor", "tier", "rate_rps", "rounds",
	"proxy_us_per_req", "proxy_us_min", "proxy_us_max",
	"over_envoy_us", "over_envoy_us_min", "over_envoy_us_max",
	"engine_us_per_req", "gap_us"}

// WriteCSV writes the rows as module.csv.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(Header); err != nil {
		return err
	}
	for _, r := range rows {
		record := []string{r.Flavor, r.Tier, strconv.Itoa(r.RateRPS), strconv.Itoa(r.Rounds)}
		for _, v := range []float64{r.Proxy.Median, r.Proxy.Min, r.Proxy.Max,
			r.OverEnvoy.Median, r.OverEnvoy.Min, r.OverEnvoy.Max, r.Engine, r.Gap} {
			record = append(record, number(v))
		}
		if err := cw.Write(record); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// number writes a figure to a tenth of a microsecond; NaN is empty.
func number(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// WriteFile reads a module-cost sweep's directory and the engine CSV and
// writes the table to out.
func WriteFile(sweepDir, engineCSV, out string) error {
	sweep, err := dataset.ReadSweep(sweepDir)
	if err != nil {
		return err
	}
	engine, err := ReadEngineCSV(engineCSV)
	if err != nil {
		return err
	}
	rows, err := Table(sweep.Steps, engine)
	if err != nil {
		return fmt.Errorf("%s: %w", sweepDir, err)
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, rows); err != nil {
		return err
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}
