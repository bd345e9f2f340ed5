// Command wafsweep measures what a WAF costs in front of a service: it
// deploys Envoy (vanilla or with the corazawaf module) in front of a
// backend, drives constant-throughput load, finds each configuration's knee
// and writes datasets, plots and a report. This package only parses the
// command line; the work is done by orchestrator/sweep and the targets.
package main

import (
	"fmt"
	"os"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
)

const usage = `usage: wafsweep <command> [flags]

commands:
  sweep     run (or resume) a sweep; see wafsweep sweep -h
  backend   run the benchmark backend (used by the local target)
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
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "wafsweep: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}
