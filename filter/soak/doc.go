// Package soak holds corazawaf's soak test: a real Envoy 1.40 with two
// workers and the full CRS tier, started on 127.0.0.1 in front of the
// backend, first has the knee of the soak's traffic mix measured, then is
// driven at 80% of it for -soak.duration with benign requests of three
// shapes and a trickle of attacks. It must answer every benign request 2xx
// and every attack 403, never restart, keep its RSS flat after warm-up and
// its Go goroutine count constant.
//
// `make test` runs it for 2 minutes; `make soak` for 30 minutes, writing the
// RSS curve and a summary to results/soak/. Without an Envoy binary or the
// module it skips, unless WAFSWEEP_E2E=required (as under `make test`).
package soak
