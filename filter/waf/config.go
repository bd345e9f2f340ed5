package waf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/wafsweep/wafsweep/filter/accel"
	"github.com/wafsweep/wafsweep/filter/internal/offload"
)

// Mode says what the filter does with Coraza's verdicts.
type Mode string

const (
	// ModeBlock acts on interruptions. The directives still decide: a rule set
	// whose SecRuleEngine is DetectionOnly never interrupts.
	ModeBlock Mode = "block"
	// ModeDetect forces SecRuleEngine DetectionOnly after the directives: rules
	// are evaluated and logged, nothing is blocked.
	ModeDetect Mode = "detect"
	// ModeOff disables the WAF: streams pass untouched and uncounted.
	ModeOff Mode = "off"
)

// FailureMode says what a stream gets when the filter itself fails (a Coraza
// error or a panic in the module).
type FailureMode string

const (
	// FailClosed answers the stream with FailureStatus: nothing uninspected
	// reaches the backend.
	FailClosed FailureMode = "closed"
	// FailOpen lets the stream through uninspected and counts the error.
	FailOpen FailureMode = "open"
)

// Config is the filter configuration: the JSON in the DynamicModuleFilter's
// filter_config (a StringValue holding JSON, or a Struct).
type Config struct {
	// Directives are SecLang lines, evaluated in order. Include names resolve
	// against our embedded files, coraza-coreruleset, then the filesystem.
	Directives []string `json:"directives"`
	// Mode is block (default), detect or off.
	Mode Mode `json:"mode"`
	// FailureMode is closed (default) or open.
	FailureMode FailureMode `json:"failure_mode"`
	// FailureStatus is the status of the fail-closed reply (default 500).
	FailureStatus int `json:"failure_status"`
	// InspectResponse runs phases 3 and 4 (default true). Response bodies are
	// inspected only when the directives enable SecResponseBodyAccess and the
	// response's MIME type is listed in SecResponseBodyMimeType.
	InspectResponse *bool `json:"inspect_response"`
	// DenyResponse shapes the local reply sent on an interruption.
	DenyResponse DenyResponse `json:"deny_response"`
	// AuditLog, when set, writes Coraza's audit log as JSON lines to this
	// file (SecAuditLogFormat JSON, SecAuditLogType Serial).
	AuditLog string `json:"audit_log"`
	// AuditEngine says which transactions AuditLog records: RelevantOnly
	// (default: those a rule marked or with a 4xx/5xx status) or On (all).
	AuditEngine string `json:"audit_engine"`
	// LogMatchedRules writes ModSecurity-style lines ([id "942100"]) for
	// every matched rule that logs, to Envoy's log (default true).
	LogMatchedRules *bool `json:"log_matched_rules"`
	// MetadataNamespace is the dynamic metadata namespace of verdicts
	// (default "corazawaf").
	MetadataNamespace string `json:"metadata_namespace"`
	// Acceleration is off (default), prefilter (remove, per transaction,
	// phase-2 @rx rules that cannot match; filter/accel) or shadow (decide
	// the same, remove nothing, count the decisions the rules contradict).
	Acceleration string `json:"acceleration"`
	// OffWorker moves phase 2 of large request bodies off Envoy's worker
	// thread, so that one expensive inspection does not stall the other
	// streams on that worker.
	OffWorker OffWorker `json:"off_worker"`
	// StreamBodies names the requests whose bodies stream to the backend
	// uninspected (default: none; see filter/README.md).
	StreamBodies StreamBodies `json:"stream_bodies"`
	// BodyBudgetBytes caps the request and response body bytes held for
	// inspection at once, over all the streams of the filter config
	// (default 256 MiB). A stream whose body would go over it is answered
	// 503 and counted (shed{reason="body_budget"}).
	BodyBudgetBytes int64 `json:"body_budget_bytes"`

	// testHooks is only accepted by builds with the corazawaf_testhooks tag.
	TestHooks *TestHooks `json:"test_hooks,omitempty"`
}

// OffWorker says which request bodies are inspected off Envoy's worker
// thread: the filter holds the stream, a low-priority thread of the module
// runs phase 2, and Envoy's scheduler resumes the stream on its worker.
type OffWorker struct {
	// Enabled turns it on (default true).
	Enabled *bool `json:"enabled"`
	// MinBodyBytes is the smallest body inspected off the worker (default
	// 8192). Below it inspection costs about as much as the handoff, and
	// headers-only requests are always inspected in place.
	MinBodyBytes int64 `json:"min_body_bytes"`
	// Threads is the number of inspection threads (default: the number of
	// CPUs the process may use: its affinity, capped by its cgroup's CPU
	// quota). The threads are shared by every filter config of the process,
	// which has as many as the largest Threads.
	Threads int `json:"threads"`
	// QueueLength is how many of this config's bodies may wait for a
	// thread (default 256). A body that finds the queue full gets the
	// failure mode's answer (shed{reason="off_worker_queue_full"}): it is
	// never inspected on Envoy's worker instead.
	QueueLength int `json:"queue_length"`
}

// DefaultOffWorkerMinBodyBytes is OffWorker.MinBodyBytes when not set.
const DefaultOffWorkerMinBodyBytes = 8192

// DefaultOffWorkerQueueLength is OffWorker.QueueLength when not set.
const DefaultOffWorkerQueueLength = 256

// MaxOffWorkerQueueLength bounds OffWorker.QueueLength: the inspection
// pool's own bound.
const MaxOffWorkerQueueLength = offload.MaxQueueLength

// DenyResponse is the local reply sent when a rule interrupts a stream.
type DenyResponse struct {
	// Body of the reply (default empty).
	Body string `json:"body"`
	// Headers added to the reply, e.g. {"content-type": "text/plain"}.
	Headers map[string]string `json:"headers"`
}

// TestHooks make the module misbehave on purpose, to prove the panic
// barrier. Only builds with the corazawaf_testhooks tag accept them.
type TestHooks struct {
	// PanicHeader names a request header whose value is the stream step
	// that panics: request_headers, request_body, response_headers,
	// response_body or stream_complete. Requests without it are served
	// normally, so one Envoy can show a panic and keep serving.
	PanicHeader string `json:"panic_header"`
}

// PanicSteps are the step names TestHooks.PanicIn accepts; off_worker is
// phase 2 of a body inspected off Envoy's worker thread.
var PanicSteps = []string{"request_headers", "request_body", "off_worker", "response_headers", "response_body", "stream_complete"}

// ParseConfig decodes and validates a filter configuration. Unknown fields
// are errors, so a typo does not silently disable a setting.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(data)) == 0 {
		return c, errors.New("empty filter_config: expected JSON such as {\"directives\": [\"SecRuleEngine On\"]}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("filter_config is not valid corazawaf JSON: %w", err)
	}
	if dec.More() {
		return c, errors.New("filter_config has trailing data after the JSON object")
	}
	c.applyDefaults()
	return c, c.validate()
}

func (c *Config) applyDefaults() {
	if c.Mode == "" {
		c.Mode = ModeBlock
	}
	if c.FailureMode == "" {
		c.FailureMode = FailClosed
	}
	if c.FailureStatus == 0 {
		c.FailureStatus = 500
	}
	if c.InspectResponse == nil {
		c.InspectResponse = ptr(true)
	}
	if c.LogMatchedRules == nil {
		c.LogMatchedRules = ptr(true)
	}
	if c.AuditLog != "" && c.AuditEngine == "" {
		c.AuditEngine = "RelevantOnly"
	}
	if c.MetadataNamespace == "" {
		c.MetadataNamespace = "corazawaf"
	}
	if c.Acceleration == "" {
		c.Acceleration = defaultAcceleration
	}
	if c.OffWorker.Enabled == nil {
		c.OffWorker.Enabled = ptr(true)
	}
	if c.OffWorker.MinBodyBytes == 0 {
		c.OffWorker.MinBodyBytes = DefaultOffWorkerMinBodyBytes
	}
	if c.OffWorker.QueueLength == 0 {
		c.OffWorker.QueueLength = DefaultOffWorkerQueueLength
	}
	c.StreamBodies.normalize()
	if c.BodyBudgetBytes == 0 {
		c.BodyBudgetBytes = DefaultBodyBudgetBytes
	}
}

func (c Config) validate() error {
	var errs []error
	switch c.Mode {
	case ModeBlock, ModeDetect, ModeOff:
	default:
		errs = append(errs, fmt.Errorf("mode %q: use block, detect or off", c.Mode))
	}
	switch c.FailureMode {
	case FailClosed, FailOpen:
	default:
		errs = append(errs, fmt.Errorf("failure_mode %q: use closed or open", c.FailureMode))
	}
	if c.FailureStatus < 200 || c.FailureStatus > 599 {
		errs = append(errs, fmt.Errorf("failure_status %d: use an HTTP status between 200 and 599", c.FailureStatus))
	}
	switch {
	case c.AuditEngine != "" && c.AuditLog == "":
		errs = append(errs, errors.New("audit_engine without audit_log: give the audit log's file path"))
	case c.AuditEngine != "" && c.AuditEngine != "RelevantOnly" && c.AuditEngine != "On":
		errs = append(errs, fmt.Errorf("audit_engine %q: use RelevantOnly or On", c.AuditEngine))
	}
	for i, d := range c.Directives {
		if strings.ContainsAny(d, "\r") {
			errs = append(errs, fmt.Errorf("directives[%d] contains a carriage return: give one directive per list entry", i))
		}
	}
	if c.OffWorker.MinBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("off_worker.min_body_bytes %d: use a size in bytes, or enabled: false", c.OffWorker.MinBodyBytes))
	}
	if c.OffWorker.Threads < 0 || c.OffWorker.Threads > maxOffWorkerThreads {
		errs = append(errs, fmt.Errorf("off_worker.threads %d: use 1 to %d, or 0 for one per CPU", c.OffWorker.Threads, maxOffWorkerThreads))
	}
	if c.OffWorker.QueueLength < 1 || c.OffWorker.QueueLength > MaxOffWorkerQueueLength {
		errs = append(errs, fmt.Errorf("off_worker.queue_length %d: use 1 to %d", c.OffWorker.QueueLength, MaxOffWorkerQueueLength))
	}
	if c.BodyBudgetBytes < minBodyBudgetBytes {
		errs = append(errs, fmt.Errorf("body_budget_bytes %d: use at least %d (1 MiB), or leave it out for %d", c.BodyBudgetBytes, minBodyBudgetBytes, DefaultBodyBudgetBytes))
	}
	if _, err := accel.ParseMode(c.Acceleration); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.StreamBodies.validate("stream_bodies"))
	if c.TestHooks != nil {
		errs = append(errs, validateTestHooks(*c.TestHooks))
	}
	return errors.Join(errs...)
}

// RouteConfig is the per-route configuration (DynamicModuleFilterPerRoute's
// filter_config). It overrides the listener's filter configuration on the
// routes or virtual hosts it is attached to.
type RouteConfig struct {
	// Mode off disables the WAF on the route; detect evaluates without
	// blocking; block (default) blocks.
	Mode Mode `json:"mode"`
	// Directives, when present, give the route a rule set of its own (built
	// with the same defaults as the listener's). Without them the route uses
	// the listener's rule set in the given mode.
	Directives []string `json:"directives"`
	// Acceleration of the route's own rule set, as the listener's
	// (default: the build's); meaningless without directives.
	Acceleration string `json:"acceleration"`
	// StreamBodies, when present, replaces the listener's stream_bodies on
	// the route (an empty object streams nothing there).
	StreamBodies *StreamBodies `json:"stream_bodies"`
}

// ParseRouteConfig decodes and validates a per-route configuration.
func ParseRouteConfig(data []byte) (RouteConfig, error) {
	var rc RouteConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rc); err != nil {
		return rc, fmt.Errorf("per-route filter_config is not valid corazawaf JSON: %w", err)
	}
	if rc.Mode == "" {
		rc.Mode = ModeBlock
	}
	switch rc.Mode {
	case ModeBlock, ModeDetect, ModeOff:
	default:
		return rc, fmt.Errorf("per-route mode %q: use block, detect or off", rc.Mode)
	}
	if rc.Mode == ModeOff && len(rc.Directives) > 0 {
		return rc, errors.New("per-route mode off with directives: drop the directives or choose block or detect")
	}
	if rc.Acceleration != "" && len(rc.Directives) == 0 {
		return rc, errors.New("per-route acceleration without directives: the route uses the listener's rule set, accelerated as the listener says")
	}
	if rc.Acceleration == "" {
		rc.Acceleration = defaultAcceleration
	}
	if _, err := accel.ParseMode(rc.Acceleration); err != nil {
		return rc, fmt.Errorf("per-route %w", err)
	}
	if rc.StreamBodies != nil {
		rc.StreamBodies.normalize()
		if err := rc.StreamBodies.validate("per-route stream_bodies"); err != nil {
			return rc, err
		}
	}
	return rc, nil
}

// minBodyBudgetBytes keeps a typo (a budget in KiB) from shedding every
// body.
const minBodyBudgetBytes = 1 << 20

// maxOffWorkerThreads bounds the inspection threads: each holds an OS thread.
const maxOffWorkerThreads = 256

func ptr[T any](v T) *T { return &v }
