// Small C helpers of the binding: the ABI version, and label vectors built on the C stack so that no Go memory holding Go
// pointers is ever passed to Envoy (cgocheck would reject it).
#pragma once

#include <stdint.h>
#include "abi.h"


static const char wafsweep_abi_version[] = "v0.2.0";
static inline const char* wafsweep_abi_version_ptr(void) { return wafsweep_abi_version; }

// Label vectors are built on the C stack so no Go memory holding Go pointers
// is ever passed to Envoy (cgocheck would reject it).
static inline envoy_dynamic_module_type_metrics_result wafsweep_increment_counter2(
    envoy_dynamic_module_type_http_filter_envoy_ptr f, size_t id,
    const char* v1, size_t l1, const char* v2, size_t l2, uint64_t value) {
  envoy_dynamic_module_type_module_buffer labels[2] = {{v1, l1}, {v2, l2}};
  return envoy_dynamic_module_callback_http_filter_increment_counter(f, id, labels, 2, value);
}
static inline envoy_dynamic_module_type_metrics_result wafsweep_increment_counter1(
    envoy_dynamic_module_type_http_filter_envoy_ptr f, size_t id, const char* v1, size_t l1, uint64_t value) {
  envoy_dynamic_module_type_module_buffer labels[1] = {{v1, l1}};
  return envoy_dynamic_module_callback_http_filter_increment_counter(f, id, labels, 1, value);
}
// kind: 0 counter, 1 histogram, 2 gauge.
static inline envoy_dynamic_module_type_metrics_result wafsweep_define_metric(
    envoy_dynamic_module_type_http_filter_config_envoy_ptr c, int kind, const char* name, size_t name_len,
    const char* l1, size_t l1_len, const char* l2, size_t l2_len, size_t n_labels, size_t* id) {
  envoy_dynamic_module_type_module_buffer n = {name, name_len};
  envoy_dynamic_module_type_module_buffer labels[2] = {{l1, l1_len}, {l2, l2_len}};
  if (kind == 1) {
    return envoy_dynamic_module_callback_http_filter_config_define_histogram(c, n, labels, n_labels, id);
  }
  if (kind == 2) {
    return envoy_dynamic_module_callback_http_filter_config_define_gauge(c, n, labels, n_labels, id);
  }
  return envoy_dynamic_module_callback_http_filter_config_define_counter(c, n, labels, n_labels, id);
}
