// The part of Envoy's dynamic-module ABI (HTTP filters) that corazawaf uses,
// declared for this project from the ABI's documented types and function
// names (Envoy 1.38-1.40; glue.h declares 1.40's ABI version, "v0.2.0").
// Envoy exports the callbacks; the module exports the event hooks, whose
// prototypes cgo generates from the //export functions in this package.
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Opaque pointers. Envoy's are real pointers. The module's are integer
// handles (runtime/cgo.Handle), and are declared here as uintptr_t, which
// the x86-64 and arm64 calling conventions pass exactly as a pointer: typed
// as pointers, cgo would give Go unsafe.Pointer values of 1, 2, 3..., and
// the Go runtime aborts the process ("invalid pointer found on stack") when
// it copies a stack holding a pointer below 4096.
typedef void* envoy_dynamic_module_type_http_filter_config_envoy_ptr;
typedef uintptr_t envoy_dynamic_module_type_http_filter_config_module_ptr;
typedef uintptr_t envoy_dynamic_module_type_http_filter_per_route_config_module_ptr;
typedef void* envoy_dynamic_module_type_http_filter_envoy_ptr;
typedef uintptr_t envoy_dynamic_module_type_http_filter_module_ptr;
typedef const char* envoy_dynamic_module_type_abi_version_module_ptr;
// Allocated by Envoy, owned by the module: deleted with scheduler_delete.
typedef void* envoy_dynamic_module_type_http_filter_scheduler_module_ptr;

typedef struct {
  const char* ptr;
  size_t length;
} envoy_dynamic_module_type_envoy_buffer;

typedef struct {
  const char* ptr;
  size_t length;
} envoy_dynamic_module_type_module_buffer;

typedef struct {
  const char* key_ptr;
  size_t key_length;
  const char* value_ptr;
  size_t value_length;
} envoy_dynamic_module_type_module_http_header;

typedef struct {
  const char* key_ptr;
  size_t key_length;
  const char* value_ptr;
  size_t value_length;
} envoy_dynamic_module_type_envoy_http_header;

// Positional enums: only their order matters to the ABI.
typedef enum { HEADER_REQUEST, HEADER_REQUEST_TRAILER, HEADER_RESPONSE, HEADER_RESPONSE_TRAILER } envoy_dynamic_module_type_http_header_type;
typedef enum { LOG_TRACE, LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_CRITICAL, LOG_OFF } envoy_dynamic_module_type_log_level;
typedef enum { BODY_RECEIVED_REQUEST, BODY_BUFFERED_REQUEST, BODY_RECEIVED_RESPONSE, BODY_BUFFERED_RESPONSE } envoy_dynamic_module_type_http_body_type;
typedef enum { METRICS_SUCCESS, METRICS_NOT_FOUND, METRICS_INVALID_LABELS, METRICS_FROZEN } envoy_dynamic_module_type_metrics_result;
typedef int envoy_dynamic_module_type_attribute_id;  // an enum on Envoy's side; the values used are in attributes.go

// Hook statuses.
typedef enum { HEADERS_CONTINUE, HEADERS_STOP_ITERATION, HEADERS_CONTINUE_AND_DONT_END_STREAM, HEADERS_STOP_ALL_AND_BUFFER, HEADERS_STOP_ALL_AND_WATERMARK } envoy_dynamic_module_type_on_http_filter_request_headers_status;
typedef envoy_dynamic_module_type_on_http_filter_request_headers_status envoy_dynamic_module_type_on_http_filter_response_headers_status;
typedef enum { BODY_CONTINUE, BODY_STOP_AND_BUFFER, BODY_STOP_AND_WATERMARK, BODY_STOP_NO_BUFFER } envoy_dynamic_module_type_on_http_filter_request_body_status;
typedef envoy_dynamic_module_type_on_http_filter_request_body_status envoy_dynamic_module_type_on_http_filter_response_body_status;
typedef enum { TRAILERS_CONTINUE, TRAILERS_STOP_ITERATION } envoy_dynamic_module_type_on_http_filter_request_trailers_status;
typedef envoy_dynamic_module_type_on_http_filter_request_trailers_status envoy_dynamic_module_type_on_http_filter_response_trailers_status;
typedef enum { LOCAL_REPLY_CONTINUE, LOCAL_REPLY_CONTINUE_AND_RESET } envoy_dynamic_module_type_on_http_filter_local_reply_status;

// Callbacks exported by Envoy (prefix envoy_dynamic_module_callback_).
uint32_t envoy_dynamic_module_callback_get_concurrency(void);
void envoy_dynamic_module_callback_log(envoy_dynamic_module_type_log_level level, envoy_dynamic_module_type_module_buffer message);
bool envoy_dynamic_module_callback_log_enabled(envoy_dynamic_module_type_log_level level);

envoy_dynamic_module_type_metrics_result envoy_dynamic_module_callback_http_filter_config_define_counter(
    envoy_dynamic_module_type_http_filter_config_envoy_ptr config, envoy_dynamic_module_type_module_buffer name,
    envoy_dynamic_module_type_module_buffer* label_names, size_t label_names_length, size_t* counter_id);
envoy_dynamic_module_type_metrics_result envoy_dynamic_module_callback_http_filter_config_define_histogram(
    envoy_dynamic_module_type_http_filter_config_envoy_ptr config, envoy_dynamic_module_type_module_buffer name,
    envoy_dynamic_module_type_module_buffer* label_names, size_t label_names_length, size_t* histogram_id);
envoy_dynamic_module_type_metrics_result envoy_dynamic_module_callback_http_filter_config_define_gauge(
    envoy_dynamic_module_type_http_filter_config_envoy_ptr config, envoy_dynamic_module_type_module_buffer name,
    envoy_dynamic_module_type_module_buffer* label_names, size_t label_names_length, size_t* gauge_id);
envoy_dynamic_module_type_metrics_result envoy_dynamic_module_callback_http_filter_set_gauge(
    envoy_dynamic_module_type_http_filter_envoy_ptr filter, size_t id, envoy_dynamic_module_type_module_buffer* label_values,
    size_t label_values_length, uint64_t value);
envoy_dynamic_module_type_metrics_result envoy_dynamic_module_callback_http_filter_increment_counter(
    envoy_dynamic_module_type_http_filter_envoy_ptr filter, size_t id, envoy_dynamic_module_type_module_buffer* label_values,
    size_t label_values_length, uint64_t value);
envoy_dynamic_module_type_metrics_result envoy_dynamic_module_callback_http_filter_record_histogram_value(
    envoy_dynamic_module_type_http_filter_envoy_ptr filter, size_t id, envoy_dynamic_module_type_module_buffer* label_values,
    size_t label_values_length, uint64_t value);

size_t envoy_dynamic_module_callback_http_get_headers_size(envoy_dynamic_module_type_http_filter_envoy_ptr filter,
                                                           envoy_dynamic_module_type_http_header_type header_type);
bool envoy_dynamic_module_callback_http_get_headers(envoy_dynamic_module_type_http_filter_envoy_ptr filter,
                                                    envoy_dynamic_module_type_http_header_type header_type,
                                                    envoy_dynamic_module_type_envoy_http_header* result_headers);

size_t envoy_dynamic_module_callback_http_get_body_chunks_size(envoy_dynamic_module_type_http_filter_envoy_ptr filter,
                                                               envoy_dynamic_module_type_http_body_type body_type);
bool envoy_dynamic_module_callback_http_get_body_chunks(envoy_dynamic_module_type_http_filter_envoy_ptr filter,
                                                        envoy_dynamic_module_type_http_body_type body_type,
                                                        envoy_dynamic_module_type_envoy_buffer* result_buffer_vector);

uint64_t envoy_dynamic_module_callback_http_get_buffer_limit(envoy_dynamic_module_type_http_filter_envoy_ptr filter);
void envoy_dynamic_module_callback_http_set_buffer_limit(envoy_dynamic_module_type_http_filter_envoy_ptr filter, uint64_t limit);

void envoy_dynamic_module_callback_http_send_response(envoy_dynamic_module_type_http_filter_envoy_ptr filter, uint32_t status_code,
                                                      envoy_dynamic_module_type_module_http_header* headers_vector,
                                                      size_t headers_vector_size, envoy_dynamic_module_type_module_buffer body,
                                                      envoy_dynamic_module_type_module_buffer details);

void envoy_dynamic_module_callback_http_set_dynamic_metadata_string(envoy_dynamic_module_type_http_filter_envoy_ptr filter,
                                                                    envoy_dynamic_module_type_module_buffer ns,
                                                                    envoy_dynamic_module_type_module_buffer key,
                                                                    envoy_dynamic_module_type_module_buffer value);
void envoy_dynamic_module_callback_http_set_dynamic_metadata_number(envoy_dynamic_module_type_http_filter_envoy_ptr filter,
                                                                    envoy_dynamic_module_type_module_buffer ns,
                                                                    envoy_dynamic_module_type_module_buffer key, double value);

bool envoy_dynamic_module_callback_http_filter_get_attribute_string(envoy_dynamic_module_type_http_filter_envoy_ptr filter,
                                                                    envoy_dynamic_module_type_attribute_id id,
                                                                    envoy_dynamic_module_type_envoy_buffer* result);
bool envoy_dynamic_module_callback_http_filter_get_attribute_int(envoy_dynamic_module_type_http_filter_envoy_ptr filter,
                                                                 envoy_dynamic_module_type_attribute_id id, uint64_t* result);

envoy_dynamic_module_type_http_filter_per_route_config_module_ptr envoy_dynamic_module_callback_get_most_specific_route_config(
    envoy_dynamic_module_type_http_filter_envoy_ptr filter);

// Flow control and the scheduler. Envoy's scheduler holds a weak reference
// to the stream's filter and posts the event to the stream's worker, where
// on_http_filter_scheduled runs; commit and delete may be called from any
// thread, and deleting right after commit does not cancel the event.
void envoy_dynamic_module_callback_http_filter_continue_decoding(envoy_dynamic_module_type_http_filter_envoy_ptr filter);
envoy_dynamic_module_type_http_filter_scheduler_module_ptr envoy_dynamic_module_callback_http_filter_scheduler_new(
    envoy_dynamic_module_type_http_filter_envoy_ptr filter);
void envoy_dynamic_module_callback_http_filter_scheduler_commit(envoy_dynamic_module_type_http_filter_scheduler_module_ptr scheduler,
                                                                uint64_t event_id);
void envoy_dynamic_module_callback_http_filter_scheduler_delete(envoy_dynamic_module_type_http_filter_scheduler_module_ptr scheduler);
