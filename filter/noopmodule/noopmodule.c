// noopmodule: an Envoy dynamic module that does nothing. It exports every
// HTTP-filter event hook corazawaf exports, accepts any filter config and
// lets every stream through untouched, without a single callback into Envoy.
//
// It is the baseline of the module-cost benchmark (the envoy-noop-module
// flavor of `make bench-module`): loaded exactly as corazawaf is, it measures
// what Envoy's dynamic-module machinery costs per request (the filter in the
// chain, the hook calls, the per-stream object), so that what corazawaf costs
// above vanilla Envoy splits into Envoy's share and the module's own.
// TestNoopModuleExportsCorazawafsHooks keeps the two sets of hooks equal.
//
// Built by the Makefile with the system C compiler: no Go runtime, on purpose.
#include "abi.h"

#define HOOK __attribute__((visibility("default")))

// Envoy 1.40's ABI version, as corazawaf declares it (glue.h).
static const char abi_version[] = "v0.2.0";

// Non-zero handles: Envoy treats 0 as "config rejected" or "no stream".
enum { CONFIG_HANDLE = 1, STREAM_HANDLE = 1 };

HOOK envoy_dynamic_module_type_abi_version_module_ptr envoy_dynamic_module_on_program_init(void) {
  return abi_version;
}

HOOK envoy_dynamic_module_type_http_filter_config_module_ptr envoy_dynamic_module_on_http_filter_config_new(
    envoy_dynamic_module_type_http_filter_config_envoy_ptr config_envoy, envoy_dynamic_module_type_envoy_buffer name,
    envoy_dynamic_module_type_envoy_buffer config) {
  return CONFIG_HANDLE;
}

HOOK void envoy_dynamic_module_on_http_filter_config_destroy(envoy_dynamic_module_type_http_filter_config_module_ptr c) {}

HOOK envoy_dynamic_module_type_http_filter_per_route_config_module_ptr
envoy_dynamic_module_on_http_filter_per_route_config_new(envoy_dynamic_module_type_envoy_buffer name,
                                                         envoy_dynamic_module_type_envoy_buffer config) {
  return CONFIG_HANDLE;
}

HOOK void envoy_dynamic_module_on_http_filter_per_route_config_destroy(
    envoy_dynamic_module_type_http_filter_per_route_config_module_ptr c) {}

HOOK envoy_dynamic_module_type_http_filter_module_ptr envoy_dynamic_module_on_http_filter_new(
    envoy_dynamic_module_type_http_filter_config_module_ptr c, envoy_dynamic_module_type_http_filter_envoy_ptr f) {
  return STREAM_HANDLE;
}

HOOK void envoy_dynamic_module_on_http_filter_destroy(envoy_dynamic_module_type_http_filter_module_ptr m) {}

HOOK envoy_dynamic_module_type_on_http_filter_request_headers_status envoy_dynamic_module_on_http_filter_request_headers(
    envoy_dynamic_module_type_http_filter_envoy_ptr f, envoy_dynamic_module_type_http_filter_module_ptr m, bool end) {
  return HEADERS_CONTINUE;
}

HOOK envoy_dynamic_module_type_on_http_filter_request_body_status envoy_dynamic_module_on_http_filter_request_body(
    envoy_dynamic_module_type_http_filter_envoy_ptr f, envoy_dynamic_module_type_http_filter_module_ptr m, bool end) {
  return BODY_CONTINUE;
}

HOOK envoy_dynamic_module_type_on_http_filter_request_trailers_status envoy_dynamic_module_on_http_filter_request_trailers(
    envoy_dynamic_module_type_http_filter_envoy_ptr f, envoy_dynamic_module_type_http_filter_module_ptr m) {
  return TRAILERS_CONTINUE;
}

HOOK envoy_dynamic_module_type_on_http_filter_response_headers_status envoy_dynamic_module_on_http_filter_response_headers(
    envoy_dynamic_module_type_http_filter_envoy_ptr f, envoy_dynamic_module_type_http_filter_module_ptr m, bool end) {
  return HEADERS_CONTINUE;
}

HOOK envoy_dynamic_module_type_on_http_filter_response_body_status envoy_dynamic_module_on_http_filter_response_body(
    envoy_dynamic_module_type_http_filter_envoy_ptr f, envoy_dynamic_module_type_http_filter_module_ptr m, bool end) {
  return BODY_CONTINUE;
}

HOOK envoy_dynamic_module_type_on_http_filter_response_trailers_status
envoy_dynamic_module_on_http_filter_response_trailers(envoy_dynamic_module_type_http_filter_envoy_ptr f,
                                                      envoy_dynamic_module_type_http_filter_module_ptr m) {
  return TRAILERS_CONTINUE;
}

HOOK void envoy_dynamic_module_on_http_filter_stream_complete(envoy_dynamic_module_type_http_filter_envoy_ptr f,
                                                              envoy_dynamic_module_type_http_filter_module_ptr m) {}

HOOK envoy_dynamic_module_type_on_http_filter_local_reply_status envoy_dynamic_module_on_http_filter_local_reply(
    envoy_dynamic_module_type_http_filter_envoy_ptr f, envoy_dynamic_module_type_http_filter_module_ptr m,
    uint32_t status, envoy_dynamic_module_type_envoy_buffer details, uintptr_t reset_reason, bool grpc) {
  return LOCAL_REPLY_CONTINUE;
}

// The hooks of features neither module uses (scheduling, HTTP callouts and
// streams, watermarks): Envoy resolves them all when it loads a module. Their
// parameters are never read, so none are declared: the x86-64 and arm64
// calling conventions let a function ignore its caller's arguments.
#define UNUSED_HOOK(name) \
  HOOK void envoy_dynamic_module_on_http_filter_##name() {}

UNUSED_HOOK(scheduled)
UNUSED_HOOK(config_scheduled)
UNUSED_HOOK(http_callout_done)
UNUSED_HOOK(http_stream_headers)
UNUSED_HOOK(http_stream_data)
UNUSED_HOOK(http_stream_trailers)
UNUSED_HOOK(http_stream_complete)
UNUSED_HOOK(http_stream_reset)
UNUSED_HOOK(config_http_callout_done)
UNUSED_HOOK(config_http_stream_headers)
UNUSED_HOOK(config_http_stream_data)
UNUSED_HOOK(config_http_stream_trailers)
UNUSED_HOOK(config_http_stream_complete)
UNUSED_HOOK(config_http_stream_reset)
UNUSED_HOOK(downstream_above_write_buffer_high_watermark)
UNUSED_HOOK(downstream_below_write_buffer_low_watermark)
