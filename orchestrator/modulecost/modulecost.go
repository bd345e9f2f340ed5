// Package modulecost measures what the corazawaf module costs Envoy per
// request, beside what the same tier costs the filter's own glue without
// Envoy (filter/accel/enginebench). LightPlan and FullCRSPlan are the
// sweeps that measure it: vanilla Envoy, Envoy with a module that does
// nothing (filter/noopmodule), and Envoy with corazawaf in each tier, each
// sweep at one fixed rate, the GET shape, rounds in alternating order.
// Table turns the sweeps' steps and the engine figures into
// results/bench/module.csv: per configuration the proxy CPU
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
	"strings"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// The fixed rates. CPU per request falls as the rate rises (more work per
// wake-up of Envoy's event loop, warmer caches), and at a few hundred
// requests per second the rounds of one configuration spread by more than
// the module costs; so each configuration is measured at the highest round
// rate that stays well below its knee on one proxy core, and compared with
// vanilla Envoy at that same rate. LightRate keeps the lightest WAF tiers
// near three quarters of a core; FullCRSRate does the same for full CRS.
const (
	LightRate   = 4000
	FullCRSRate = 800
)

// LightTiers are the module's configurations measured at LightRate, from
// nothing inspected to targeted rules; Tiers adds the full CRS, measured at
// FullCRSRate.
var (
	LightTiers = []string{plan.TierModuleOff, plan.TierHeadersOnly, plan.TierTargeted}
	Tiers      = append(slices.Clone(LightTiers), plan.TierFullCRS)
)

// LightPlan is the sweep of the configurations measured at LightRate:
// vanilla Envoy, the no-op module and corazawaf's LightTiers.
func LightPlan() plan.Plan {
	return fixedRate(LightRate, []string{plan.FlavorEnvoy, plan.FlavorEnvoyNoopModule, plan.FlavorWAF}, LightTiers)
}

// FullCRSPlan is the sweep of full CRS, with vanilla Envoy, at FullCRSRate:
// the stock module and the accelerated build, whose engine-only gain the
// proxy's figure puts in proportion.
func FullCRSPlan() plan.Plan {
	return fixedRate(FullCRSRate, []string{plan.FlavorEnvoy, plan.FlavorWAF, plan.FlavorWAFAccelerated}, []string{plan.TierFullCRS})
}

// fixedRate is a fixed-rate sweep: every step at rate, no knee search above
// it, no SLO searches, three rounds of 20 s windows, GET.
func fixedRate(rate int, flavors, tiers []string) plan.Plan {
	p := plan.Default()
	p.Flavors = flavors
	p.Tiers = slices.Clone(tiers)
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

// Table computes the rows from fixed-rate sweeps (the steps of each) and
// the engine figures of their tiers (GET shape; the accelerated flavor for
// waf-accelerated, stock for waf). Each sweep
// is at one rate and is compared with its own vanilla Envoy steps, round
// by round. The no-op module or a tier of Tiers with no passing step in
// any sweep is an error: its cost would be a guess.
func Table(sweeps [][]dataset.StepRow, engine []EngineCost) ([]Row, error) {
	var rows []Row
	var errs []error
	for _, steps := range sweeps {
		r, err := sweepRows(steps, engine)
		rows = append(rows, r...)
		errs = append(errs, err)
	}
	if !slices.ContainsFunc(rows, func(r Row) bool { return r.Flavor == plan.FlavorEnvoyNoopModule }) {
		errs = append(errs, fmt.Errorf("%s: no passing step (it splits the module's cost into Envoy's and the module's own)",
			plan.FlavorEnvoyNoopModule))
	}
	for _, tier := range Tiers {
		if !slices.ContainsFunc(rows, func(r Row) bool { return r.Flavor == plan.FlavorWAF && r.Tier == tier }) {
			errs = append(errs, fmt.Errorf("waf/%s: no passing step", tier))
		}
	}
	slices.SortStableFunc(rows, func(a, b Row) int {
		if a.RateRPS != b.RateRPS {
			return b.RateRPS - a.RateRPS // the light configurations' higher rate first
		}
		return tierRank(a) - tierRank(b)
	})
	return rows, errors.Join(errs...)
}

// sweepRows computes the rows of one fixed-rate sweep.
func sweepRows(steps []dataset.StepRow, engine []EngineCost) ([]Row, error) {
	byConfig := map[string]map[int]dataset.StepRow{} // config -> round -> step
	var order []string
	rate := 0
	for _, s := range dataset.CapacitySteps(steps) {
		if s.Verdict != dataset.VerdictPass || s.Shape != plan.ShapeGet {
			continue
		}
		if rate != 0 && s.TargetRPS != rate {
			return nil, fmt.Errorf("steps at %d and %d RPS in one sweep: each sweep compares one rate", rate, s.TargetRPS)
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
		return nil, errors.New("a sweep without a passing vanilla Envoy step: nothing to compare the module with")
	}
	var rows []Row
	var errs []error
	for _, id := range order {
		r, err := configRow(byConfig[id], envoy, engine)
		rows = append(rows, r)
		errs = append(errs, err)
	}
	return rows, errors.Join(errs...)
}

// configRow is one configuration's row: its rounds' steps against vanilla
// Envoy's of the same rounds.
func configRow(rounds, envoy map[int]dataset.StepRow, engine []EngineCost) (Row, error) {
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
	r := Row{Flavor: config.Flavor, Tier: config.Tier, RateRPS: config.TargetRPS, Rounds: len(rounds),
		Proxy: spreadOf(proxy), OverEnvoy: spreadOf(over), Engine: math.NaN(), Gap: math.NaN()}
	if !plan.HasWAF(config.Flavor) {
		return r, nil
	}
	flavor := engineFlavor(config.Flavor)
	ns, ok := engineCost(engine, config.Tier, flavor)
	if !ok {
		return r, fmt.Errorf("no engine figure for tier %s (%s, get)", config.Tier, flavor)
	}
	r.Engine, r.Gap = ns/1000, r.OverEnvoy.Median-ns/1000
	return r, nil
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

// engineFlavor names enginebench's flavor for a module flavor: the
// accelerated build's, or stock Coraza's.
func engineFlavor(moduleFlavor string) string {
	if moduleFlavor == plan.FlavorWAFAccelerated {
		return "accelerated"
	}
	return "stock"
}

func engineCost(engine []EngineCost, tier, flavor string) (float64, bool) {
	for _, e := range engine {
		if e.Tier == tier && e.Shape == plan.ShapeGet && e.Flavor == flavor {
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

// WriteFile reads the engine CSV and the fixed-rate sweeps' directories
// and writes the table to out.
func WriteFile(engineCSV, out string, sweepDirs ...string) error {
	engine, err := ReadEngineCSV(engineCSV)
	if err != nil {
		return err
	}
	var sweeps [][]dataset.StepRow
	for _, dir := range sweepDirs {
		sweep, err := dataset.ReadSweep(dir)
		if err != nil {
			return err
		}
		sweeps = append(sweeps, sweep.Steps)
	}
	rows, err := Table(sweeps, engine)
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(sweepDirs, ", "), err)
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, rows); err != nil {
		return err
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}
