package abi

/*
#include "glue.h"
*/
import "C"

import (
	"runtime/cgo"

	"github.com/wafsweep/wafsweep/filter/internal/offload"
	"github.com/wafsweep/wafsweep/filter/waf"
)

// filterConfig is what Envoy's http_filter_config points at (by handle).
type filterConfig struct {
	filter *waf.Filter
	// settings are filter's, copied once: hooks read them on every
	// request, and Filter.Settings copies the whole configuration.
	settings waf.Config
	metrics  *metrics
	pool     *offload.Pool // inspects large bodies off the worker; nil when off
}

// routeConfig is what a DynamicModuleFilterPerRoute points at.
type routeConfig struct {
	route *waf.Route
}

// httpFilter is the module side of one HTTP stream.
type httpFilter struct {
	config *filterConfig
	stream *waf.Stream // created on request headers, once the route is known
	// failed is set after a panic: later hooks take the failure path
	// without touching the WAF again, and the panic is logged only once.
	failed   bool
	replied  bool // a local reply was sent for this stream
	complete bool // stream_complete ran
	// restoreLimit is Envoy's buffer limit from before the filter raised it
	// to hold a body for inspection (0: not raised).
	restoreLimit   uint64
	restorePending bool // the body was released: restore on the next frame
	// pending is the request inspection running on a pool thread, if any:
	// until it is back, the pool thread owns stream.
	pending *inspection
}

// Module pointers, as Envoy stores them, are cgo.Handle values; abi.h
// declares them as uintptr_t (see there why never as pointers), so cgo makes
// every module pointer type an alias of C.uintptr_t.

// objectOf returns the Go object behind a module pointer Envoy handed back.
// cgo.Handle.Value panics on an unknown handle; every caller runs inside a
// panic barrier.
func objectOf[T any](h C.uintptr_t) *T {
	return cgo.Handle(h).Value().(*T)
}

// newHandle makes the module pointer Envoy keeps for v.
func newHandle(v any) C.uintptr_t { return C.uintptr_t(cgo.NewHandle(v)) }

func deleteHandle(h C.uintptr_t) {
	if h != 0 {
		cgo.Handle(h).Delete()
	}
}
