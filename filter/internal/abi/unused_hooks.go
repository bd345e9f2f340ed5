package abi

/*
#include "glue.h"
*/
import "C"

// Envoy resolves every HTTP-filter hook when it loads the module, so the
// hooks for features corazawaf does not use (HTTP callouts and streams,
// config-level scheduling, watermarks, local-reply notification) exist and
// do nothing. Their parameters are opaque to us: plain pointers and integers
// are enough to match the C calling convention.

//export envoy_dynamic_module_on_http_filter_config_scheduled
func envoy_dynamic_module_on_http_filter_config_scheduled(p0, p1 C.uintptr_t, p2 C.uint64_t) {}

//export envoy_dynamic_module_on_http_filter_http_callout_done
func envoy_dynamic_module_on_http_filter_http_callout_done(p0, p1 C.uintptr_t, p2 C.uint64_t, p3 C.int, p4 C.uintptr_t, p5 C.size_t, p6 C.uintptr_t, p7 C.size_t) {
}

//export envoy_dynamic_module_on_http_filter_http_stream_headers
func envoy_dynamic_module_on_http_filter_http_stream_headers(p0, p1 C.uintptr_t, p2 C.uint64_t, p3 C.uintptr_t, p4 C.size_t, p5 C.bool) {
}

//export envoy_dynamic_module_on_http_filter_http_stream_data
func envoy_dynamic_module_on_http_filter_http_stream_data(p0, p1 C.uintptr_t, p2 C.uint64_t, p3 C.uintptr_t, p4 C.size_t, p5 C.bool) {
}

//export envoy_dynamic_module_on_http_filter_http_stream_trailers
func envoy_dynamic_module_on_http_filter_http_stream_trailers(p0, p1 C.uintptr_t, p2 C.uint64_t, p3 C.uintptr_t, p4 C.size_t) {
}

//export envoy_dynamic_module_on_http_filter_http_stream_complete
func envoy_dynamic_module_on_http_filter_http_stream_complete(p0, p1 C.uintptr_t, p2 C.uint64_t) {}

//export envoy_dynamic_module_on_http_filter_http_stream_reset
func envoy_dynamic_module_on_http_filter_http_stream_reset(p0, p1 C.uintptr_t, p2 C.uint64_t, p3 C.int) {
}

//export envoy_dynamic_module_on_http_filter_config_http_callout_done
func envoy_dynamic_module_on_http_filter_config_http_callout_done(p0, p1 C.uintptr_t, p2 C.uint64_t, p3 C.int, p4 C.uintptr_t, p5 C.size_t, p6 C.uintptr_t, p7 C.size_t) {
}

//export envoy_dynamic_module_on_http_filter_config_http_stream_headers
func envoy_dynamic_module_on_http_filter_config_http_stream_headers(p0, p1 C.uintptr_t, p2 C.uint64_t, p3 C.uintptr_t, p4 C.size_t, p5 C.bool) {
}

//export envoy_dynamic_module_on_http_filter_config_http_stream_data
func envoy_dynamic_module_on_http_filter_config_http_stream_data(p0, p1 C.uintptr_t, p2 C.uint64_t, p3 C.uintptr_t, p4 C.size_t, p5 C.bool) {
}

//export envoy_dynamic_module_on_http_filter_config_http_stream_trailers
func envoy_dynamic_module_on_http_filter_config_http_stream_trailers(p0, p1 C.uintptr_t, p2 C.uint64_t, p3 C.uintptr_t, p4 C.size_t) {
}

//export envoy_dynamic_module_on_http_filter_config_http_stream_complete
func envoy_dynamic_module_on_http_filter_config_http_stream_complete(p0, p1 C.uintptr_t, p2 C.uint64_t) {
}

//export envoy_dynamic_module_on_http_filter_config_http_stream_reset
func envoy_dynamic_module_on_http_filter_config_http_stream_reset(p0, p1 C.uintptr_t, p2 C.uint64_t, p3 C.int) {
}

//export envoy_dynamic_module_on_http_filter_downstream_above_write_buffer_high_watermark
func envoy_dynamic_module_on_http_filter_downstream_above_write_buffer_high_watermark(p0, p1 C.uintptr_t) {
}

//export envoy_dynamic_module_on_http_filter_downstream_below_write_buffer_low_watermark
func envoy_dynamic_module_on_http_filter_downstream_below_write_buffer_low_watermark(p0, p1 C.uintptr_t) {
}

// local_reply is told about every local reply (ours and Envoy's); the
// default is to let it go out.
//
//export envoy_dynamic_module_on_http_filter_local_reply
func envoy_dynamic_module_on_http_filter_local_reply(p0, p1 C.uintptr_t, p2 C.uint32_t, p3, p4 C.uintptr_t, p5 C.bool) C.envoy_dynamic_module_type_on_http_filter_local_reply_status {
	return C.LOCAL_REPLY_CONTINUE
}
