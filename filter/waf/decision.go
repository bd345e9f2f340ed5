package waf

import (
	"time"
)

// Header is one HTTP header field as Envoy has it.
type Header struct {
	Name, Value string
}

// Connection identifies both ends of the downstream connection.
type Connection struct {
	ClientIP   string
	ClientPort int
	ServerIP   string
	ServerPort int
}

// RequestHead is what the filter knows when request headers arrive.
type RequestHead struct {
	Conn Connection
	// Method, Path (with query) and Authority come from the pseudo-headers.
	Method, Path, Authority string
	// HasAuthority tells an empty :authority (a client's empty Host) from
	// none at all: CRS scores the two differently (920290 vs 920280).
	HasAuthority bool
	// Protocol as Envoy names it: "HTTP/1.0", "HTTP/1.1", "HTTP/2", "HTTP/3".
	Protocol string
	// Headers are the regular (non-pseudo) headers.
	Headers []Header
	// ClientRequestID is the request's x-request-id, which the client may
	// have chosen: it is logged next to the transaction id, never used as it.
	ClientRequestID string
	// EndOfStream is true when the request has no body.
	EndOfStream bool
}

// Action is what Envoy should do after a hook.
type Action int

const (
	// Continue lets the data (and anything held before it) through.
	Continue Action = iota
	// Hold keeps the data in Envoy's buffer: the verdict is not known yet.
	Hold
	// Reply answers the stream with Decision.Reply and stops it.
	Reply
	// Defer holds the data like Hold, and hands the caller the rest of the
	// inspection, Decision.Deferred, to run away from Envoy's worker thread.
	Defer
)

// Decision is the outcome of one hook.
type Decision struct {
	Action Action
	// Reply is set when Action is Reply.
	Reply *LocalReply
	// BufferLimit, when non-zero, asks Envoy to raise the stream's buffer
	// limit to at least this many bytes before holding a body.
	BufferLimit uint64
	// Deferred is set when Action is Defer. It may run on any goroutine,
	// once; the caller must not use the Stream until it has returned, and
	// then acts on the Decision it returns (never Defer again).
	Deferred func() Decision
}

// LocalReply is the answer the filter sends instead of the backend's.
type LocalReply struct {
	Status  int
	Headers []Header
	Body    string
	// Details becomes Envoy's response code details (%RESPONSE_CODE_DETAILS%).
	Details string
	// Verdict is set when a rule (or a body limit) caused the reply.
	Verdict *Verdict
}

// Verdict describes an interruption, for logs, metrics and dynamic metadata.
type Verdict struct {
	RuleID int
	Action string
	Status int
	Phase  string
}

// Outcome is the summary of a finished stream, for metrics.
type Outcome struct {
	// Inspected is false when no transaction ran (WAF off for the route).
	Inspected bool
	// Blocked is the verdict that interrupted the stream, if any.
	Blocked *Verdict
	// Detected is what would have interrupted in DetectionOnly mode.
	Detected *Verdict
	// Errors counts Coraza errors seen during the stream.
	Errors int
	// InspectionTime is the time spent inside Coraza over all hooks.
	InspectionTime time.Duration
	// AccelDisagreements counts the shadow-mode acceleration decisions
	// that the exact evaluation of this stream contradicted.
	AccelDisagreements int
	// Shed says why the filter answered the stream without inspecting it
	// to the end, for lack of room (ShedBodyBudget, ShedQueueFull); "" when
	// it did not.
	Shed string
}

// Reasons for shedding a stream (Outcome.Shed).
const (
	// ShedBodyBudget: its body would have taken the bytes held for
	// inspection over body_budget_bytes.
	ShedBodyBudget = "body_budget"
	// ShedQueueFull: its body was due for inspection off the worker while
	// every inspection thread was busy and their queue was full.
	ShedQueueFull = "off_worker_queue_full"
)
