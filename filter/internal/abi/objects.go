package abi

/*
#include "glue.h"
*/
import "C"

import (
	"runtime/cgo"

	"github.com/wafsweep/wafsweep/filter/internal/lifecycle"
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
	// life is where the stream is: every hook asks it whether to touch the
	// WAF, and tells it what happened (see package lifecycle).
	life lifecycle.Stream
	// inspection is the request inspection an inspection thread owns while
	// life says so: the hand-over of its verdict.
	inspection *inspection
}

// next moves the stream's lifecycle on. A refused transition is a bug of
// the module's: the panic barrier answers it by the failure mode.
func (f *httpFilter) next(e lifecycle.Event) {
	if err := f.life.Next(e); err != nil {
		panic(err)
	}
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
