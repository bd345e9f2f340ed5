package abi

/*
#include "glue.h"
*/
import "C"

import (
	"runtime"

	"github.com/wafsweep/wafsweep/filter/internal/workerp"
)

// envoyWorkers is the number of Envoy worker threads that call into Go, read
// once in program init, before any config exists.
var envoyWorkers int

// readEnvoyWorkers asks Envoy for its --concurrency and gives the Go runtime
// Ps for it.
func readEnvoyWorkers() {
	envoyWorkers = int(C.envoy_dynamic_module_callback_get_concurrency())
	sizeProcs(0)
}

// sizeProcs raises GOMAXPROCS to workerp.ProcsFor(envoyWorkers, poolThreads) and
// never lowers it: other filter configs may share the runtime.
func sizeProcs(poolThreads int) {
	if want := workerp.ProcsFor(envoyWorkers, poolThreads); runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
		logInfo("Go runtime: %d Ps for %d Envoy workers and %d inspection threads", want, envoyWorkers, poolThreads)
	}
}
