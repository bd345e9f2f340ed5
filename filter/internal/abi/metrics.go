package abi

/*
#include "glue.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"

	"github.com/wafsweep/wafsweep/filter/waf"
)

// metrics are the filter's Envoy stats, defined once per filter config (the
// ABI only allows defining them in the config hook) and recorded per stream.
// With metrics_namespace "corazawaf" they appear in /stats as
// corazawaf.<name> and in /stats/prometheus with their labels.
type metrics struct {
	transactions C.size_t // counter: streams inspected
	blocked      C.size_t // counter{phase, rule_id}: streams interrupted
	detected     C.size_t // counter{phase, rule_id}: DetectionOnly would-be interruptions
	errors       C.size_t // counter{kind}: Coraza errors and panics
	inspectionUS C.size_t // histogram: µs inside Coraza per stream
	bypassed     C.size_t // counter: streams with the WAF off for their route
	goroutines   C.size_t // gauge: goroutines of the module's Go runtime (leak watch)
	// lastGoroutines is the gauge's last value: the gauge is set only when
	// the count changes, not with a callback on every stream.
	lastGoroutines atomic.Int64
	// counter: shadow-mode acceleration decisions the exact evaluation contradicted
	accelDisagreements C.size_t
	offWorker          C.size_t // counter{placement}: inspections handed to a pool thread
	shed               C.size_t // counter{reason}: streams answered for lack of room (waf.Outcome.Shed)
}

// Metric kinds, as the C helper wafsweep_define_metric takes them.
const (
	counterMetric   = 0
	histogramMetric = 1
	gaugeMetric     = 2
)

func defineMetrics(cfg C.envoy_dynamic_module_type_http_filter_config_envoy_ptr) (*metrics, error) {
	m := &metrics{}
	defs := []struct {
		id     *C.size_t
		name   string
		kind   C.int
		labels []string
	}{
		{&m.transactions, "transactions", counterMetric, nil},
		{&m.blocked, "blocked", counterMetric, []string{"phase", "rule_id"}},
		{&m.detected, "detected", counterMetric, []string{"phase", "rule_id"}},
		{&m.errors, "errors", counterMetric, []string{"kind"}},
		{&m.inspectionUS, "inspection_time_us", histogramMetric, nil},
		{&m.bypassed, "bypassed", counterMetric, nil},
		{&m.goroutines, "go_goroutines", gaugeMetric, nil},
		{&m.accelDisagreements, "accel_disagreements", counterMetric, nil},
		{&m.offWorker, "off_worker_inspections", counterMetric, []string{"placement"}},
		{&m.shed, "shed", counterMetric, []string{"reason"}},
	}
	var errs []error
	for _, d := range defs {
		l1, l2 := "", ""
		if len(d.labels) > 0 {
			l1 = d.labels[0]
		}
		if len(d.labels) > 1 {
			l2 = d.labels[1]
		}
		res := C.wafsweep_define_metric(cfg, d.kind, cstr(d.name), C.size_t(len(d.name)),
			cstr(l1), C.size_t(len(l1)), cstr(l2), C.size_t(len(l2)), C.size_t(len(d.labels)), d.id)
		if res != C.METRICS_SUCCESS {
			errs = append(errs, fmt.Errorf("defining metric %s: result %d", d.name, int(res)))
		}
	}
	return m, errors.Join(errs...)
}

// record writes a finished stream's outcome.
func (m *metrics) record(s stream, o waf.Outcome) {
	if n := int64(runtime.NumGoroutine()); m.lastGoroutines.Swap(n) != n {
		C.envoy_dynamic_module_callback_http_filter_set_gauge(s.ptr, m.goroutines, nil, 0, C.uint64_t(n))
	}
	if !o.Inspected {
		C.envoy_dynamic_module_callback_http_filter_increment_counter(s.ptr, m.bypassed, nil, 0, 1)
		return
	}
	C.envoy_dynamic_module_callback_http_filter_increment_counter(s.ptr, m.transactions, nil, 0, 1)
	C.envoy_dynamic_module_callback_http_filter_record_histogram_value(s.ptr, m.inspectionUS, nil, 0,
		C.uint64_t(o.InspectionTime.Microseconds()))
	if o.Blocked != nil {
		m.countVerdict(s, m.blocked, o.Blocked)
	}
	if o.Detected != nil {
		m.countVerdict(s, m.detected, o.Detected)
	}
	if o.Errors > 0 {
		m.countError(s, "coraza", uint64(o.Errors))
	}
	if o.Shed != "" {
		C.wafsweep_increment_counter1(s.ptr, m.shed, cstr(o.Shed), C.size_t(len(o.Shed)), 1)
	}
	if o.AccelDisagreements > 0 {
		C.envoy_dynamic_module_callback_http_filter_increment_counter(s.ptr, m.accelDisagreements, nil, 0,
			C.uint64_t(o.AccelDisagreements))
	}
}

func (m *metrics) countVerdict(s stream, id C.size_t, v *waf.Verdict) {
	rule := strconv.Itoa(v.RuleID)
	C.wafsweep_increment_counter2(s.ptr, id, cstr(v.Phase), C.size_t(len(v.Phase)), cstr(rule), C.size_t(len(rule)), 1)
}

func (m *metrics) countError(s stream, kind string, n uint64) {
	C.wafsweep_increment_counter1(s.ptr, m.errors, cstr(kind), C.size_t(len(kind)), C.uint64_t(n))
}

func (m *metrics) countOffWorker(s stream, placement string) {
	C.wafsweep_increment_counter1(s.ptr, m.offWorker, cstr(placement), C.size_t(len(placement)), 1)
}
