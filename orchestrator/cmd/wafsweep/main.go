// Command wafsweep measures what a WAF costs in front of a service: it
// deploys Envoy (vanilla or with the corazawaf module) in front of a
// backend, drives constant-throughput load, finds each configuration's knee
// and writes datasets, plots and a report. This package only parses the
// command line; the work is done by orchestrator/sweep and the targets.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/compare"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/modulecost"
	"github.com/wafsweep/wafsweep/orchestrator/report"
)

const usage = `usage: wafsweep <command> [flags]

commands:
  sweep        run (or resume) a sweep; see wafsweep sweep -h
  compare      compare two sweeps config by config: wafsweep compare DIR_A DIR_B
  report       derive a sweep's knees.csv and slo_knees.csv from its steps.csv
               again, then draw its plots, report.md and report.html:
               wafsweep report SWEEP_DIR
  module-cost  the module's cost per request from the --profile module-cost and
               module-cost-full-crs sweeps:
               wafsweep module-cost ENGINE_CSV OUT_CSV SWEEP_DIR...
  size         instances and cores for a rate at a p99 objective, from a sweep:
               wafsweep size --config ID --rps R --p99 S [--headroom H] SWEEP_DIR
  backend      run the benchmark backend (used by the local target)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "sweep":
		os.Exit(runSweep(os.Args[2:]))
	case "backend":
		os.Exit(backend.Main(os.Args[2:]))
	case "compare":
		os.Exit(runCompare(os.Args[2:]))
	case "report":
		os.Exit(runReport(os.Args[2:]))
	case "module-cost":
		os.Exit(runModuleCost(os.Args[2:]))
	case "size":
		os.Exit(runSize(os.Args[2:], os.Stdout, os.Stderr))
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "wafsweep: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}

// runCompare prints the comparison of two sweep directories.
func runCompare(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: wafsweep compare DIR_A DIR_B (two sweep directories, each with its knees.csv)")
		return 2
	}
	rows, err := compare.Dirs(args[0], args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "wafsweep compare: %v\n", err)
		return 1
	}
	if err := compare.WriteMarkdown(os.Stdout, filepath.Base(args[0]), filepath.Base(args[1]), rows); err != nil {
		fmt.Fprintf(os.Stderr, "wafsweep compare: %v\n", err)
		return 1
	}
	return 0
}

// runReport derives a sweep directory's knees and SLO knees from its
// steps again, then its report.
func runReport(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: wafsweep report SWEEP_DIR (a sweep directory, with its steps.csv and metadata.json)")
		return 2
	}
	if err := dataset.Rederive(args[0]); err != nil {
		fmt.Fprintf(os.Stderr, "wafsweep report: %v\n", err)
		return 1
	}
	if err := report.Regenerate(args[0]); err != nil {
		fmt.Fprintf(os.Stderr, "wafsweep report: %v\n", err)
		return 1
	}
	return 0
}

// runModuleCost writes module.csv from the module-cost sweeps and
// enginebench's CSV of their tiers.
func runModuleCost(args []string) int {
	if len(args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: wafsweep module-cost ENGINE_CSV OUT_CSV SWEEP_DIR... (enginebench's CSV of the tiers; sweeps run with --profile module-cost and module-cost-full-crs)")
		return 2
	}
	if err := modulecost.WriteFile(args[0], args[1], args[2:]...); err != nil {
		fmt.Fprintf(os.Stderr, "wafsweep module-cost: %v\n", err)
		return 1
	}
	return 0
}
