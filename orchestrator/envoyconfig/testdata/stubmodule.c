/*
 * A pass-through Envoy dynamic module used only by tests: it lets Envoy load
 * and validate a bootstrap that names a WAF module without building the real
 * libcorazawaf.so. Every hook takes no arguments here; the x86-64 and arm64
 * calling conventions make that safe because the caller owns the arguments.
 * Envoy 1.40 expects ABI version "v0.2.0" (an older string only warns).
 * Config and filter constructors return a non-NULL dummy (NULL would reject
 * the config); every other hook returns 0, which is "Continue".
 */
#include <stdint.h>

const char *envoy_dynamic_module_on_program_init(void) { return "v0.2.0"; }

#define NONNULL(name) uintptr_t envoy_dynamic_module_on_##name(void) { return 1; }
#define ZERO(name) uintptr_t envoy_dynamic_module_on_##name(void) { return 0; }

NONNULL(http_filter_config_new)
NONNULL(http_filter_per_route_config_new)
NONNULL(http_filter_new)

ZERO(http_filter_config_destroy)
ZERO(http_filter_per_route_config_destroy)
ZERO(http_filter_config_scheduled)
ZERO(http_filter_config_http_callout_done)
ZERO(http_filter_config_http_stream_headers)
ZERO(http_filter_config_http_stream_data)
ZERO(http_filter_config_http_stream_trailers)
ZERO(http_filter_config_http_stream_complete)
ZERO(http_filter_config_http_stream_reset)
ZERO(http_filter_request_headers)
ZERO(http_filter_request_body)
ZERO(http_filter_request_trailers)
ZERO(http_filter_response_headers)
ZERO(http_filter_response_body)
ZERO(http_filter_response_trailers)
ZERO(http_filter_stream_complete)
ZERO(http_filter_destroy)
ZERO(http_filter_scheduled)
ZERO(http_filter_http_callout_done)
ZERO(http_filter_http_stream_headers)
ZERO(http_filter_http_stream_data)
ZERO(http_filter_http_stream_trailers)
ZERO(http_filter_http_stream_complete)
ZERO(http_filter_http_stream_reset)
ZERO(http_filter_downstream_above_write_buffer_high_watermark)
ZERO(http_filter_downstream_below_write_buffer_low_watermark)
ZERO(http_filter_local_reply)
