// Package e2e holds corazawaf's end-to-end tests: a real Envoy 1.40, started
// by the tests on 127.0.0.1, loads the real libcorazawaf.so in front of a
// real backend. `make test` builds the module and Envoy and sets
// WAFSWEEP_E2E=required, so a missing piece fails instead of skipping.
package e2e
