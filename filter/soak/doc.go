// Package soak holds corazawaf's load tests, run against a real Envoy 1.40
// with two workers and the full CRS tier, started on 127.0.0.1 in front of
// the backend. Each first measures the knee of its traffic mix.
//
// The soak test then drives Envoy at 80% of the knee for -soak.duration
// with benign requests of three shapes and a trickle of attacks. It must
// answer every benign request 2xx and every attack 403, never restart, keep
// its RSS flat after warm-up and its Go goroutine count constant.
//
// The stall test (stall_test.go) checks that large bodies, inspected off
// Envoy's worker threads, do not hold up the GETs around them.
//
// `make test` runs the soak for 2 minutes and the stall test with 30-second
// runs; `make soak` for 30 minutes and 60-second runs, writing the RSS
// curve, the stall figures and a summary to results/soak/. Without an Envoy
// binary or the module the tests skip, unless WAFSWEEP_E2E=required (as
// under `make test`).
package soak
