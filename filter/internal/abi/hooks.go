package abi

/*
#include "glue.h"
*/
import "C"

import (
	"fmt"

	"github.com/wafsweep/wafsweep/filter/internal/lifecycle"
	"github.com/wafsweep/wafsweep/filter/internal/workerp"
	"github.com/wafsweep/wafsweep/filter/waf"
)

// This file holds the event hooks Envoy calls (names without the
// envoy_dynamic_module_on_ prefix are what the ABI documents). Each one is a
// few lines: find the object, call package waf, map the decision back.

//export envoy_dynamic_module_on_program_init
func envoy_dynamic_module_on_program_init() C.envoy_dynamic_module_type_abi_version_module_ptr {
	readEnvoyWorkers()
	return C.wafsweep_abi_version_ptr()
}

//export envoy_dynamic_module_on_http_filter_config_new
func envoy_dynamic_module_on_http_filter_config_new(configEnvoy C.envoy_dynamic_module_type_http_filter_config_envoy_ptr,
	name, config C.envoy_dynamic_module_type_envoy_buffer) (out C.envoy_dynamic_module_type_http_filter_config_module_ptr) {
	defer func() {
		if r := recover(); r != nil {
			logError("filter config rejected: panic while building it: %v", r)
			out = 0
		}
	}()
	f, err := waf.NewFilter(envoyBytes(config), envoyLogger{})
	if err != nil {
		logError("filter config %q rejected: %v", envoyString(name.ptr, name.length), err)
		return 0
	}
	m, err := defineMetrics(configEnvoy)
	if err != nil {
		logError("filter config %q rejected: %v", envoyString(name.ptr, name.length), err)
		return 0
	}
	settings := f.Settings()
	pool := offloadPool(settings.OffWorker)
	releaseBuildGarbage()
	return newHandle(&filterConfig{filter: f, settings: settings, metrics: m, pool: pool})
}

//export envoy_dynamic_module_on_http_filter_config_destroy
func envoy_dynamic_module_on_http_filter_config_destroy(p C.envoy_dynamic_module_type_http_filter_config_module_ptr) {
	defer recoverQuietly("http_filter_config_destroy")
	cfg := objectOf[filterConfig](p)
	deleteHandle(p) // the inspection pool outlives configs (see offloadPool)
	cfg.filter.Close()
}

//export envoy_dynamic_module_on_http_filter_per_route_config_new
func envoy_dynamic_module_on_http_filter_per_route_config_new(name, config C.envoy_dynamic_module_type_envoy_buffer) (out C.envoy_dynamic_module_type_http_filter_per_route_config_module_ptr) {
	defer func() {
		if r := recover(); r != nil {
			logError("per-route config rejected: panic while building it: %v", r)
			out = 0
		}
	}()
	rc, err := waf.ParseRouteConfig(envoyBytes(config))
	if err == nil {
		var route *waf.Route
		if route, err = waf.NewRoute(rc, envoyLogger{}); err == nil {
			return newHandle(&routeConfig{route: route})
		}
	}
	logError("per-route config %q rejected: %v", envoyString(name.ptr, name.length), err)
	return 0
}

//export envoy_dynamic_module_on_http_filter_per_route_config_destroy
func envoy_dynamic_module_on_http_filter_per_route_config_destroy(p C.envoy_dynamic_module_type_http_filter_per_route_config_module_ptr) {
	defer recoverQuietly("http_filter_per_route_config_destroy")
	rc := objectOf[routeConfig](p)
	deleteHandle(p)
	rc.route.Close()
}

//export envoy_dynamic_module_on_http_filter_new
func envoy_dynamic_module_on_http_filter_new(configPtr C.envoy_dynamic_module_type_http_filter_config_module_ptr,
	_ C.envoy_dynamic_module_type_http_filter_envoy_ptr) (out C.envoy_dynamic_module_type_http_filter_module_ptr) {
	defer func() {
		if r := recover(); r != nil {
			logError("creating a stream: %v", r)
			out = 0
		}
	}()
	cfg := objectOf[filterConfig](configPtr)
	return newHandle(&httpFilter{config: cfg})
}

//export envoy_dynamic_module_on_http_filter_request_headers
func envoy_dynamic_module_on_http_filter_request_headers(envoyPtr C.envoy_dynamic_module_type_http_filter_envoy_ptr,
	modulePtr C.envoy_dynamic_module_type_http_filter_module_ptr, endOfStream C.bool) (status C.envoy_dynamic_module_type_on_http_filter_request_headers_status) {
	workerp.Keep()
	s := stream{envoyPtr}
	var f *httpFilter
	defer func() {
		if r := recover(); r != nil {
			status = onPanic(f, s, "request_headers", r, reqHeadersStop, reqHeadersContinue)
		}
	}()
	f = objectOf[httpFilter](modulePtr)
	if f.life.Failed() {
		return closedOrOpen(f, reqHeadersStop, reqHeadersContinue)
	}
	var route *waf.Route
	if p, ok := s.routeConfig(); ok {
		route = objectOf[routeConfig](p).route
	}
	var err error
	if f.stream, err = f.config.filter.NewStream(route); err != nil {
		panic(fmt.Errorf("starting the stream: %w", err))
	}
	f.next(lifecycle.Start)
	if !f.stream.InspectsRequest() {
		return reqHeadersContinue // WAF off for the route (counted as bypassed when it completes)
	}
	d := f.stream.OnRequestHeaders(s.requestHead(bool(endOfStream)))
	if id := f.stream.TransactionID(); id != "" {
		// The access log can then join Envoy's line to the WAF's.
		s.setMetadataString(f.namespace(), "transaction_id", id)
	}
	return pick(f.apply(s, d), reqHeadersContinue, reqHeadersStop)
}

//export envoy_dynamic_module_on_http_filter_request_body
func envoy_dynamic_module_on_http_filter_request_body(envoyPtr C.envoy_dynamic_module_type_http_filter_envoy_ptr,
	modulePtr C.envoy_dynamic_module_type_http_filter_module_ptr, endOfStream C.bool) (status C.envoy_dynamic_module_type_on_http_filter_request_body_status) {
	workerp.Keep()
	s := stream{envoyPtr}
	var f *httpFilter
	defer func() {
		if r := recover(); r != nil {
			status = onPanic(f, s, "request_body", r, reqBodyStop, reqBodyContinue)
		}
	}()
	f = objectOf[httpFilter](modulePtr)
	if f.life.Failed() {
		return closedOrOpen(f, reqBodyStop, reqBodyContinue)
	}
	f.restoreBufferLimit(s)
	if f.life.OwnedByInspectionThread() {
		return reqBodyWatermark // nothing passes before the verdict
	}
	if !f.life.Inspects() {
		return reqBodyContinue
	}
	d := f.settle(s, f.stream.OnRequestBody(s.bodyFrames(C.BODY_RECEIVED_REQUEST), bool(endOfStream)))
	if f.life.OwnedByInspectionThread() {
		return reqBodyWatermark
	}
	return pickBody(f.apply(s, d), reqBodyContinue, reqBodyBuffer, reqBodyStop)
}

//export envoy_dynamic_module_on_http_filter_request_trailers
func envoy_dynamic_module_on_http_filter_request_trailers(envoyPtr C.envoy_dynamic_module_type_http_filter_envoy_ptr,
	modulePtr C.envoy_dynamic_module_type_http_filter_module_ptr) (status C.envoy_dynamic_module_type_on_http_filter_request_trailers_status) {
	workerp.Keep()
	s := stream{envoyPtr}
	var f *httpFilter
	defer func() {
		if r := recover(); r != nil {
			status = onPanic(f, s, "request_trailers", r, reqTrailersStop, reqTrailersContinue)
		}
	}()
	f = objectOf[httpFilter](modulePtr)
	if f.life.Failed() {
		return closedOrOpen(f, reqTrailersStop, reqTrailersContinue)
	}
	if f.life.OwnedByInspectionThread() {
		return reqTrailersStop
	}
	if !f.life.Inspects() {
		return reqTrailersContinue
	}
	return pick(f.apply(s, f.settle(s, f.stream.OnRequestTrailers())), reqTrailersContinue, reqTrailersStop)
}

//export envoy_dynamic_module_on_http_filter_response_headers
func envoy_dynamic_module_on_http_filter_response_headers(envoyPtr C.envoy_dynamic_module_type_http_filter_envoy_ptr,
	modulePtr C.envoy_dynamic_module_type_http_filter_module_ptr, endOfStream C.bool) (status C.envoy_dynamic_module_type_on_http_filter_response_headers_status) {
	workerp.Keep()
	s := stream{envoyPtr}
	var f *httpFilter
	defer func() {
		if r := recover(); r != nil {
			status = onPanic(f, s, "response_headers", r, respHeadersStop, respHeadersContinue)
		}
	}()
	f = objectOf[httpFilter](modulePtr)
	if !f.life.Inspects() || !f.stream.InspectsResponse() {
		return respHeadersContinue
	}
	code, headers := s.responseHead()
	d := f.stream.OnResponseHeaders(code, headers, bool(endOfStream))
	return pick(f.apply(s, d), respHeadersContinue, respHeadersStop)
}

//export envoy_dynamic_module_on_http_filter_response_body
func envoy_dynamic_module_on_http_filter_response_body(envoyPtr C.envoy_dynamic_module_type_http_filter_envoy_ptr,
	modulePtr C.envoy_dynamic_module_type_http_filter_module_ptr, endOfStream C.bool) (status C.envoy_dynamic_module_type_on_http_filter_response_body_status) {
	workerp.Keep()
	s := stream{envoyPtr}
	var f *httpFilter
	defer func() {
		if r := recover(); r != nil {
			status = onPanic(f, s, "response_body", r, respBodyStop, respBodyContinue)
		}
	}()
	f = objectOf[httpFilter](modulePtr)
	if !f.life.Inspects() {
		return respBodyContinue
	}
	f.restoreBufferLimit(s)
	if !f.stream.HoldsResponse() {
		return respBodyContinue
	}
	d := f.stream.OnResponseBody(s.bodyFrames(C.BODY_RECEIVED_RESPONSE), bool(endOfStream))
	return pickBody(f.apply(s, d), respBodyContinue, respBodyBuffer, respBodyStop)
}

//export envoy_dynamic_module_on_http_filter_response_trailers
func envoy_dynamic_module_on_http_filter_response_trailers(envoyPtr C.envoy_dynamic_module_type_http_filter_envoy_ptr,
	modulePtr C.envoy_dynamic_module_type_http_filter_module_ptr) (status C.envoy_dynamic_module_type_on_http_filter_response_trailers_status) {
	workerp.Keep()
	s := stream{envoyPtr}
	var f *httpFilter
	defer func() {
		if r := recover(); r != nil {
			status = onPanic(f, s, "response_trailers", r, respTrailersStop, respTrailersContinue)
		}
	}()
	f = objectOf[httpFilter](modulePtr)
	if !f.life.Inspects() {
		return respTrailersContinue
	}
	return pick(f.apply(s, f.stream.OnResponseTrailers()), respTrailersContinue, respTrailersStop)
}

// stream_complete is where end-of-stream work happens (logging phase,
// metrics, Close): since Envoy 1.40 destroy runs deferred, after the stream
// is gone, so its callbacks can no longer reach the stream's stats.
//
//export envoy_dynamic_module_on_http_filter_stream_complete
func envoy_dynamic_module_on_http_filter_stream_complete(envoyPtr C.envoy_dynamic_module_type_http_filter_envoy_ptr,
	modulePtr C.envoy_dynamic_module_type_http_filter_module_ptr) {
	workerp.Keep()
	s := stream{envoyPtr}
	var f *httpFilter
	defer func() {
		if r := recover(); r != nil {
			onPanic(f, s, "stream_complete", r, 0, 0)
			if f != nil && !f.life.OwnedByInspectionThread() {
				f.release() // Complete broke off: the transaction is still open
			}
		}
	}()
	f = objectOf[httpFilter](modulePtr)
	if f.life.Ended() || !f.end() {
		return
	}
	if f.life.Broken() {
		f.release()
		return
	}
	outcome := f.stream.Complete()
	f.config.metrics.record(s, outcome)
	if outcome.Detected != nil {
		s.setMetadataNumber(f.namespace(), "detected_rule_id", float64(outcome.Detected.RuleID))
	}
}

//export envoy_dynamic_module_on_http_filter_destroy
func envoy_dynamic_module_on_http_filter_destroy(modulePtr C.envoy_dynamic_module_type_http_filter_module_ptr) {
	defer recoverQuietly("http_filter_destroy")
	f := objectOf[httpFilter](modulePtr)
	defer deleteHandle(modulePtr)
	if !f.life.Ended() && f.end() {
		// Envoy always reports completion first; this only guards against a
		// transaction staying open (or an inspection committing to a
		// stream that is gone) if it ever does not.
		f.endTransaction(f.life.Broken())
	}
}

// end records that Envoy completed the stream, and reports whether the
// worker ends its transaction: not when there is none, nor when an
// inspection thread still owns the stream (it ends it when done).
func (f *httpFilter) end() (workerEnds bool) {
	if f.life.OwnedByInspectionThread() && !f.abandonInspection() {
		f.next(lifecycle.Resume) // the thread was done: the stream is the worker's again
	}
	f.next(lifecycle.End)
	return f.stream != nil && f.life.Phase() != lifecycle.Abandoned
}

// apply carries out a decision's side effects and reports the action left
// for the hook status.
func (f *httpFilter) apply(s stream, d waf.Decision) waf.Action {
	switch d.Action {
	case waf.Hold:
		f.life.Raised(s.raiseBufferLimit(d.BufferLimit))
	case waf.Continue:
		// Once the verdict is in, the rest of the stream needs no large
		// buffer (restored at the next frame).
		f.life.Released()
	case waf.Reply:
		f.next(lifecycle.Reply)
		if v := d.Reply.Verdict; v != nil {
			ns := f.namespace()
			s.setMetadataNumber(ns, "rule_id", float64(v.RuleID))
			s.setMetadataNumber(ns, "status", float64(v.Status))
			s.setMetadataString(ns, "action", v.Action)
			s.setMetadataString(ns, "phase", v.Phase)
		}
		s.sendReply(d.Reply)
	}
	return d.Action
}

// restoreBufferLimit puts back Envoy's own buffer limit after a held body
// was released, so flow control (not a WAF-sized buffer) paces the rest of
// a large body.
func (f *httpFilter) restoreBufferLimit(s stream) {
	if limit, due := f.life.RestoreDue(); due {
		s.setBufferLimit(limit)
	}
}

func (f *httpFilter) namespace() string { return f.config.settings.MetadataNamespace }

// pick maps an action onto a headers or trailers status.
func pick[T any](a waf.Action, cont, stop T) T {
	if a == waf.Continue {
		return cont
	}
	return stop
}

// pickBody maps an action onto a body status: held frames stay in Envoy's
// buffer; after a reply nothing more is buffered.
func pickBody[T any](a waf.Action, cont, buffer, stop T) T {
	switch a {
	case waf.Continue:
		return cont
	case waf.Hold:
		return buffer
	default:
		return stop
	}
}

func logError(format string, args ...any) { logAt(waf.LevelError, format, args...) }
func logInfo(format string, args ...any)  { logAt(waf.LevelInfo, format, args...) }

func logAt(level waf.Level, format string, args ...any) {
	if l := (envoyLogger{}); l.Enabled(level) {
		l.Log(level, "[corazawaf] "+fmt.Sprintf(format, args...))
	}
}

// recoverQuietly guards hooks that have no stream to answer.
func recoverQuietly(hook string) {
	if r := recover(); r != nil {
		logError("panic in %s: %v", hook, r)
	}
}
