package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/sizing"
)

// runSize answers "how many instances and cores for R RPS at p99 <= S"
// from a sweep directory (package sizing does the work).
func runSize(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("wafsweep size", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var req sizing.Request
	fs.StringVar(&req.ConfigID, "config", "", "the configuration to size, as knees.csv names it (e.g. waf-accelerated/full-crs/get)")
	fs.Float64Var(&req.RPS, "rps", 0, "the traffic to carry, requests per second")
	fs.DurationVar(&req.P99, "p99", 0, "the p99 objective to meet (e.g. 50ms); the plan rests on the loosest objective the sweep searched within it")
	fs.Float64Var(&req.Headroom, "headroom", 0.2, "share of each instance's measured rate kept free, from 0 to below 1")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: wafsweep size --config ID --rps R --p99 S [--headroom H] SWEEP_DIR")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	if err := req.Validate(); err != nil {
		fmt.Fprintf(stderr, "wafsweep size: %v\n", err)
		return 2
	}
	dir := fs.Arg(0)
	sw, err := dataset.ReadSweep(dir)
	if err == nil {
		var a sizing.Answer
		if a, err = sizing.Size(sw, req); err == nil {
			writeAnswer(stdout, filepath.Base(dir), a)
			return 0
		}
	}
	fmt.Fprintf(stderr, "wafsweep size: %s: %v\n", dir, err)
	return 1
}

func writeAnswer(w io.Writer, sweep string, a sizing.Answer) {
	r := a.Request
	fmt.Fprintf(w, "%s at %g RPS, p99 <= %v (sweep %s, %s):\n", r.ConfigID, r.RPS, r.P99, sweep, a.Machine)
	fmt.Fprintf(w, "  each instance: %d RPS within p99 <= %g ms measured, planned at %.0f RPS (%.0f%% headroom), %s\n",
		a.MeasuredRPS, a.ObjectiveMs, a.PlannedRPS, 100*r.Headroom, coresText(a.ProxyCores, "CPU"))
	fmt.Fprintf(w, "  instances: %d, %s reserved\n", a.Instances, coresText(a.ReservedCores, "CPU"))
	if !math.IsNaN(a.UsedCores) {
		outside := ""
		if a.OutsideFit {
			outside = " (outside the rates the cost line was fitted on)"
		}
		fmt.Fprintf(w, "  CPU used at %.0f RPS each (cost model): %.2f cores in all%s\n", r.RPS/float64(a.Instances), a.UsedCores, outside)
	}
	for _, n := range a.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

func coresText(n float64, unit string) string {
	switch {
	case math.IsNaN(n):
		return unit + "s unknown"
	case n == 1:
		return "1 " + unit
	}
	return fmt.Sprintf("%g %ss", n, unit)
}
