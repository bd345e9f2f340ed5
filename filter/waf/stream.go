package waf

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/corazawaf/coraza/v3/types"
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

// bodyHeadroom is added to the inspection limit when raising Envoy's buffer
// limit: Coraza stops at the limit, but Envoy holds whole frames.
const bodyHeadroom = 1 << 20

// Stream drives one Coraza transaction through the hooks of one HTTP stream.
// It is used by one Envoy worker thread at a time and is not safe for
// concurrent use.
type Stream struct {
	settings *Config
	bodies   *StreamBodies // what streams uninspected: the route's or the listener's
	engine   *Engine
	log      Logger
	budget   *bodyBudget // the filter config's; nil (unlimited) in tests without a Filter
	reserved int64       // bytes of this stream's bodies taken from budget

	tx                types.Transaction
	protocol          string
	policy            bodyPolicy // what the request's headers made of its body
	grpc              bool       // Envoy answers this request's local replies in gRPC form
	clientRequestID   string     // the request's x-request-id, for logs only
	requestBodyBytes  int64
	responseBodyBytes int64
	requestDone       bool // phase 2 has run
	responseHeld      bool // response headers were held for body inspection
	responseDone      bool // phase 4 has run
	replied           bool // we sent a local reply: do not inspect it
	outcome           Outcome
	inspectionStart   time.Time
	panicStep         string // test builds only: the step a request asked to panic in
}

// NewStream starts inspecting a stream with engine, or passes it through
// untouched when engine is nil (WAF off for the route).
func NewStream(settings *Config, engine *Engine, log Logger) *Stream {
	return &Stream{settings: settings, bodies: &settings.StreamBodies, engine: engine, log: log}
}

// OnRequestHeaders runs phase 1 and, when the request has no body or its
// body is not inspected, phase 2.
func (s *Stream) OnRequestHeaders(req RequestHead) Decision {
	s.grpc = envoyTakesForGRPC(req) // first: a panic's failure reply needs it
	s.choosePanicStep(req)
	s.testPanic("request_headers")
	if s.engine == nil {
		return Decision{}
	}
	s.startTimer()
	defer s.stopTimer()

	s.tx = s.engine.newTransaction()
	s.clientRequestID = req.ClientRequestID
	s.outcome.Inspected = true
	s.protocol = corazaProtocol(req.Protocol)
	s.policy = s.bodies.policyFor(req)

	s.tx.ProcessConnection(req.Conn.ClientIP, req.Conn.ClientPort, req.Conn.ServerIP, req.Conn.ServerPort)
	s.tx.ProcessURI(requestTarget(req), req.Method, s.protocol)
	for _, h := range req.Headers {
		s.tx.AddRequestHeader(h.Name, h.Value)
	}
	if chunkedOnTheWire(req) {
		s.tx.AddRequestHeader("Transfer-Encoding", "chunked")
	}
	if req.Authority != "" || req.HasAuthority {
		// Envoy keeps Host in :authority; rules look for REQUEST_HEADERS:Host.
		s.tx.AddRequestHeader("Host", req.Authority)
		s.tx.SetServerName(hostWithoutPort(req.Authority))
	}
	if it := s.tx.ProcessRequestHeaders(); it != nil {
		return s.interrupt(it, "request_headers")
	}
	if s.policy == tunnelRefused && declaresBody(req) {
		// The body of a tunnel request cannot be told from the tunnel: Envoy
		// never ends it, so it could only be held forever or let through.
		if d, refused := s.refuseTunnel("request_headers"); refused {
			return d
		}
	}
	if req.EndOfStream || s.policy != bodyInspected || !s.tx.IsRequestBodyAccessible() {
		// Phase 2 always runs: CRS decides on the anomaly score there. When
		// the body is not inspected it can run now: an opted-in body then
		// streams, and a refused tunnel's first data is answered.
		return s.finishRequest()
	}
	return Decision{Action: Hold, BufferLimit: bufferLimitFor(s.engine.limits.RequestBodyLimit)}
}

// chunkedOnTheWire reports an HTTP/1.1 request that came with a chunked
// body: Envoy's codec consumes Transfer-Encoding before filters run (and
// frames the body chunked again upstream), so without it rules such as
// 920171 (GET or HEAD with Transfer-Encoding) never see what the client
// sent. An HTTP/1.1 request body without Content-Length can only be
// chunked, unless the request opens a tunnel (Upgrade, CONNECT): Envoy
// then leaves the stream open for the tunnel's bytes, body or none, and a
// websocket handshake is a GET whose stream never ends.
func chunkedOnTheWire(req RequestHead) bool {
	return req.Protocol == "HTTP/1.1" && !req.EndOfStream && req.Method != "CONNECT" &&
		!hasHeader(req.Headers, "upgrade") && !hasHeader(req.Headers, "content-length") &&
		!hasHeader(req.Headers, "transfer-encoding")
}

// OnRequestBody writes a body frame into the transaction. Frames are held
// in Envoy until phase 2 has run, so nothing uninspected reaches the backend.
// Phase 2 of a large body is deferred (see OffWorker).
func (s *Stream) OnRequestBody(frames [][]byte, endOfStream bool) Decision {
	s.testPanic("request_body")
	if s.tx != nil && s.policy == tunnelRefused && !s.replied && len(frames) > 0 {
		if d, refused := s.refuseTunnel("request_body"); refused {
			return d
		}
	}
	if s.tx == nil || s.requestDone || s.replied {
		return Decision{}
	}
	s.startTimer()
	defer s.stopTimer()
	limit := s.engine.limits.RequestBodyLimit
	for _, frame := range frames {
		if !s.reserve(len(frame)) {
			return s.overBudget("request_body")
		}
		if s.requestBodyBytes+int64(len(frame)) >= limit && s.offWorker(limit) {
			// The write that reaches the limit runs phase 2 inside Coraza
			// (ProcessPartial) or rejects the body: defer it with a copy of
			// the frame, which is valid only during this hook.
			last := append([]byte(nil), frame[:limit-s.requestBodyBytes]...)
			return s.deferred(func() Decision { return s.writeLastFrame(last) })
		}
		it, written, err := s.tx.WriteRequestBody(frame)
		if err != nil {
			return s.fail("request body", err)
		}
		if it != nil {
			return s.interrupt(it, "request_body")
		}
		s.requestBodyBytes += int64(written)
		if written < len(frame) || s.requestBodyBytes >= limit {
			// ProcessPartial: Coraza ran phase 2 when the limit was reached
			// (a body of exactly the limit counts as over it); finishing is
			// then a no-op that returns its verdict. The rest of the body is
			// forwarded uninspected, as the directive says.
			return s.finishRequest()
		}
	}
	if endOfStream {
		return s.finishBody()
	}
	return Decision{Action: Hold}
}

// OnRequestTrailers ends the request when it carries trailers.
func (s *Stream) OnRequestTrailers() Decision {
	if s.tx == nil || s.requestDone || s.replied {
		return Decision{}
	}
	s.startTimer()
	defer s.stopTimer()
	return s.finishBody()
}

// finishBody runs phase 2 on a complete body, or defers it.
func (s *Stream) finishBody() Decision {
	if s.offWorker(s.requestBodyBytes) {
		return s.deferred(s.finishRequest)
	}
	return s.finishRequest()
}

func (s *Stream) finishRequest() Decision {
	s.requestDone = true
	it, err := s.tx.ProcessRequestBody()
	if err != nil {
		return s.fail("request body", err)
	}
	if it != nil {
		return s.interrupt(it, "request_body")
	}
	return s.detectAfter("request_body", Decision{})
}

// offWorker reports whether phase 2 on a body of this size is deferred.
func (s *Stream) offWorker(bodyBytes int64) bool {
	ow := s.settings.OffWorker
	return ow.Enabled != nil && *ow.Enabled && bodyBytes >= ow.MinBodyBytes
}

// deferred wraps the rest of the request's inspection for Decision.Deferred.
func (s *Stream) deferred(work func() Decision) Decision {
	return Decision{Action: Defer, Deferred: func() Decision {
		s.testPanic("off_worker")
		s.startTimer()
		defer s.stopTimer()
		return work()
	}}
}

// writeLastFrame writes the part of a frame that reaches the body limit:
// Coraza then rejects the body or runs phase 2 on what it kept.
func (s *Stream) writeLastFrame(part []byte) Decision {
	it, written, err := s.tx.WriteRequestBody(part)
	if err != nil {
		return s.fail("request body", err)
	}
	if it != nil {
		return s.interrupt(it, "request_body")
	}
	s.requestBodyBytes += int64(written)
	return s.finishRequest()
}

// InspectsRequest reports whether the stream runs a transaction (the WAF
// is on for its route): the caller then gathers RequestHead, which costs
// a dozen calls into Envoy.
func (s *Stream) InspectsRequest() bool { return s.engine != nil }

// InspectsResponse reports whether OnResponseHeaders has work to do: a
// running transaction that inspects responses, was not answered, and whose
// rule set or audit log reads the response. The caller need not gather the
// response headers otherwise.
func (s *Stream) InspectsResponse() bool {
	return s.tx != nil && !s.replied && *s.settings.InspectResponse && !s.tx.IsInterrupted() &&
		s.engine.needsResponse(s.tx)
}

// OnResponseHeaders runs phase 3 and decides whether the body is inspected.
func (s *Stream) OnResponseHeaders(status int, headers []Header, endOfStream bool) Decision {
	s.testPanic("response_headers")
	if !s.InspectsResponse() {
		return Decision{}
	}
	s.startTimer()
	defer s.stopTimer()
	contentType := ""
	for _, h := range headers {
		s.tx.AddResponseHeader(h.Name, h.Value)
		if strings.EqualFold(h.Name, "content-type") {
			contentType = h.Value
		}
	}
	if it := s.tx.ProcessResponseHeaders(status, s.protocol); it != nil {
		return s.interrupt(it, "response_headers")
	}
	inspectBody := s.tx.IsResponseBodyAccessible() && s.tx.IsResponseBodyProcessable()
	// A tunnel's response is the tunnel; an event stream never ends.
	if endOfStream || s.policy != bodyInspected || isEventStream(contentType) || !inspectBody {
		return s.finishResponse()
	}
	s.responseHeld = true
	return Decision{Action: Hold, BufferLimit: bufferLimitFor(s.engine.limits.ResponseBodyLimit)}
}

// HoldsResponse reports whether OnResponseBody has work to do: the
// response body is held for phase 4. The caller need not gather the body's
// frames otherwise.
func (s *Stream) HoldsResponse() bool {
	return s.tx != nil && s.responseHeld && !s.responseDone && !s.replied
}

// OnResponseBody writes a response frame into the transaction.
func (s *Stream) OnResponseBody(frames [][]byte, endOfStream bool) Decision {
	s.testPanic("response_body")
	if !s.HoldsResponse() {
		return Decision{}
	}
	s.startTimer()
	defer s.stopTimer()
	for _, frame := range frames {
		if !s.reserve(len(frame)) {
			return s.overBudget("response_body")
		}
		it, written, err := s.tx.WriteResponseBody(frame)
		if err != nil {
			return s.fail("response body", err)
		}
		if it != nil {
			return s.interrupt(it, "response_body")
		}
		s.responseBodyBytes += int64(written)
		if written < len(frame) || s.responseBodyBytes >= s.engine.limits.ResponseBodyLimit {
			return s.finishResponse()
		}
	}
	if endOfStream {
		return s.finishResponse()
	}
	return Decision{Action: Hold}
}

// OnResponseTrailers ends a held response that carries trailers.
func (s *Stream) OnResponseTrailers() Decision {
	if !s.HoldsResponse() {
		return Decision{}
	}
	s.startTimer()
	defer s.stopTimer()
	return s.finishResponse()
}

func (s *Stream) finishResponse() Decision {
	s.responseDone = true
	it, err := s.tx.ProcessResponseBody()
	if err != nil {
		return s.fail("response body", err)
	}
	if it != nil {
		return s.interrupt(it, "response_body")
	}
	return s.detectAfter("response_body", Decision{})
}

// Complete runs the logging phase and releases the transaction. It is
// called once, when Envoy reports the stream complete.
func (s *Stream) Complete() Outcome {
	s.releaseBodies()
	s.testPanic("stream_complete")
	if s.tx == nil {
		return s.outcome
	}
	s.startTimer()
	s.tx.ProcessLogging()
	s.outcome.AccelDisagreements = s.engine.finishTransaction(s.tx)
	id := s.tx.ID() // Close returns the transaction to Coraza's pool
	err := s.tx.Close()
	s.tx = nil // closed: nothing may close it again (see Release)
	if err != nil {
		s.outcome.Errors++
		s.logf(LevelWarn, "closing %s: %v", transactionLabel(id, s.clientRequestID), err)
	}
	s.stopTimer()
	return s.outcome
}

// Release closes the transaction without the logging phase, for a stream
// whose inspection broke off (a panic): Close deletes the files Coraza
// spilled large bodies to and returns its buffers. It is idempotent, and
// a no-op after Complete.
func (s *Stream) Release() error {
	s.releaseBodies()
	tx := s.tx
	if tx == nil {
		return nil
	}
	s.tx = nil
	// The accelerator keeps state per transaction until its last decision
	// or Finish: a transaction broken off in between must not leave it to
	// the next user of Coraza's pooled transaction.
	s.engine.finishTransaction(tx)
	if err := tx.Close(); err != nil {
		return fmt.Errorf("closing transaction %s: %w", tx.ID(), err)
	}
	return nil
}

// refuseTunnel answers a tunnel the operator did not opt in (see
// StreamBodies) when it carries data: nothing of it reaches the backend.
// Once the backend has answered, Envoy turns the reply into a reset. The
// refusal goes through Coraza's interruption, so the rule engine's mode
// applies as to any rule: under DetectionOnly (mode detect) it is only
// recorded, refused is false, and the tunnel streams from then on.
func (s *Stream) refuseTunnel(phase string) (d Decision, refused bool) {
	it := &types.Interruption{Action: "deny", Status: 403, Data: "tunnel not listed in stream_bodies.upgrades"}
	if tx, ok := s.tx.(interface{ Interrupt(*types.Interruption) }); ok {
		tx.Interrupt(it)
		if !s.tx.IsInterrupted() {
			s.policy = bodyStreamed
			s.logf(LevelInfo, "[corazawaf] %s: a tunnel (upgrade or CONNECT) that stream_bodies.upgrades does not list carried data; not refused (rule engine not On)", s.txLabel())
			return s.detectAfter(phase, Decision{}), false
		}
	} // else: this Coraza cannot be told to interrupt; refuse all the same
	v := &Verdict{Action: it.Action, Status: it.Status, Phase: phase}
	s.outcome.Blocked = v
	s.replied = true
	s.logf(LevelInfo, "[corazawaf] %s refused: a tunnel (upgrade or CONNECT) that stream_bodies.upgrades does not list carried data", s.txLabel())
	return Decision{Action: Reply, Reply: &LocalReply{Status: it.Status, Body: s.settings.DenyResponse.Body,
		Headers: append(s.denyHeaders(), s.grpcStatus(it.Status)...), Details: "corazawaf_tunnel_not_streamed", Verdict: v}}, true
}

// FailureReply is the fail-closed answer to an internal error.
func (s *Stream) FailureReply() *LocalReply {
	return s.localReply(s.settings.FailureStatus, "corazawaf_internal_error")
}

// localReply is an empty local reply with status, in gRPC form for a gRPC
// request; details becomes %RESPONSE_CODE_DETAILS%.
func (s *Stream) localReply(status int, details string) *LocalReply {
	return &LocalReply{Status: status, Headers: s.grpcStatus(status), Details: details}
}

// failureModeAnswer is what failure_mode says a stream gets when the filter
// cannot inspect it: through uninspected (open), or the failure reply
// with details (closed).
func (s *Stream) failureModeAnswer(details string) Decision {
	if s.settings.FailureMode == FailOpen {
		s.requestDone, s.responseDone = true, true
		return Decision{}
	}
	s.replied = true
	return Decision{Action: Reply, Reply: s.localReply(s.settings.FailureStatus, details)}
}

// Overloaded answers a stream whose inspection was deferred (Defer) but
// that no inspection thread could take: every one busy, their queue full.
// It gets the failure mode's answer, as for an internal error: a flood of
// expensive bodies must not move their inspection onto Envoy's workers.
func (s *Stream) Overloaded() Decision {
	s.outcome.Shed = ShedQueueFull
	s.logf(LevelWarn, "[corazawaf] %s not inspected: every inspection thread is busy and their queue is full (failure_mode %s)",
		s.txLabel(), s.settings.FailureMode)
	return s.failureModeAnswer("corazawaf_overloaded")
}

// reserve takes a held frame's bytes from the filter config's body budget.
func (s *Stream) reserve(n int) bool {
	if !s.budget.reserve(int64(n)) {
		return false
	}
	s.reserved += int64(n)
	return true
}

// releaseBodies gives the stream's bytes back to the budget: Envoy and
// Coraza hold its bodies until the stream ends.
func (s *Stream) releaseBodies() {
	s.budget.release(s.reserved)
	s.reserved = 0
}

// overBudget answers 503 a stream whose body would take the bytes held for
// inspection over the filter's body_budget_bytes; whatever the failure
// mode, since nothing failed: the filter sheds load it has no room for.
func (s *Stream) overBudget(phase string) Decision {
	s.outcome.Shed = ShedBodyBudget
	s.replied = true
	s.logf(LevelWarn, "[corazawaf] %s answered 503 in %s: its body would take the bytes held for inspection over body_budget_bytes (%d)",
		s.txLabel(), phase, s.settings.BodyBudgetBytes)
	return Decision{Action: Reply, Reply: s.localReply(503, "corazawaf_body_budget")}
}

func (s *Stream) interrupt(it *types.Interruption, phase string) Decision {
	v := &Verdict{RuleID: it.RuleID, Action: it.Action, Status: interruptionStatus(it), Phase: phase}
	s.outcome.Blocked = v
	s.replied = true
	s.logf(LevelInfo, "[corazawaf] %s interrupted by rule %d in %s: %s, status %d",
		s.txLabel(), v.RuleID, phase, v.Action, v.Status)
	return Decision{Action: Reply, Reply: s.denyReply(v, it)}
}

// detectAfter records what a DetectionOnly rule set would have done.
func (s *Stream) detectAfter(phase string, d Decision) Decision {
	if s.outcome.Detected != nil {
		return d
	}
	if dt, ok := s.tx.(interface{ DetectionOnlyInterruption() *types.Interruption }); ok {
		if it := dt.DetectionOnlyInterruption(); it != nil {
			s.outcome.Detected = &Verdict{RuleID: it.RuleID, Action: it.Action, Status: interruptionStatus(it), Phase: phase}
		}
	}
	return d
}

func (s *Stream) denyReply(v *Verdict, it *types.Interruption) *LocalReply {
	r := &LocalReply{Status: v.Status, Body: s.settings.DenyResponse.Body, Verdict: v,
		Details: "corazawaf_denied_rule_" + strconv.Itoa(v.RuleID)}
	r.Headers = append(s.denyHeaders(), s.grpcStatus(v.Status)...)
	switch it.Action {
	case "redirect":
		r.Headers = append(r.Headers, Header{Name: "location", Value: it.Data})
	case "drop":
		r.Headers = append(r.Headers, Header{Name: "connection", Value: "close"})
	}
	return r
}

func (s *Stream) denyHeaders() []Header {
	var headers []Header
	for name, value := range s.settings.DenyResponse.Headers {
		headers = append(headers, Header{Name: name, Value: value})
	}
	return headers
}

// fail handles a Coraza error by the configured failure mode.
func (s *Stream) fail(where string, err error) Decision {
	s.outcome.Errors++
	s.logf(LevelError, "[corazawaf] %s of %s failed: %v", where, s.txLabel(), err)
	return s.failureModeAnswer("corazawaf_internal_error")
}

// TransactionID is the id of the stream's transaction ("" when none runs).
func (s *Stream) TransactionID() string {
	if s.tx == nil {
		return ""
	}
	return s.tx.ID()
}

// txLabel names the transaction in log lines, with the client's
// x-request-id as a field of its own.
func (s *Stream) txLabel() string { return transactionLabel(s.tx.ID(), s.clientRequestID) }

func transactionLabel(id, clientRequestID string) string {
	return "transaction " + id + " (x-request-id " + loggedRequestID(clientRequestID) + ")"
}

func (s *Stream) startTimer() { s.inspectionStart = time.Now() }
func (s *Stream) stopTimer()  { s.outcome.InspectionTime += time.Since(s.inspectionStart) }

func (s *Stream) logf(level Level, format string, args ...any) {
	if s.log != nil && s.log.Enabled(level) { // format only what Envoy keeps
		s.log.Log(level, fmt.Sprintf(format, args...))
	}
}

// testPanic panics in the step a test request asked for (test builds only).
func (s *Stream) testPanic(step string) {
	if testHooksEnabled && s.panicStep == step {
		panic("corazawaf test hook: panic in " + step)
	}
}

func (s *Stream) choosePanicStep(req RequestHead) {
	if !testHooksEnabled || s.settings.TestHooks == nil {
		return
	}
	for _, h := range req.Headers {
		if strings.EqualFold(h.Name, s.settings.TestHooks.PanicHeader) {
			s.panicStep = h.Value
		}
	}
}

// interruptionStatus applies Coraza's convention: deny without status is 403.
func interruptionStatus(it *types.Interruption) int {
	switch {
	case it.Status != 0:
		return it.Status
	case it.Action == "redirect":
		return 302
	default:
		return 403
	}
}

func bufferLimitFor(inspectionLimit int64) uint64 {
	if inspectionLimit <= 0 {
		return 0
	}
	return uint64(inspectionLimit) + bodyHeadroom
}

// corazaProtocol maps Envoy's protocol names onto the request-line form
// Coraza and CRS expect.
func corazaProtocol(p string) string {
	switch p {
	case "HTTP/2":
		return "HTTP/2.0"
	case "HTTP/3":
		return "HTTP/3.0"
	case "":
		return "HTTP/1.1"
	default:
		return p
	}
}

// requestTarget is the request line's target. CONNECT has no :path: its
// target is the authority (RFC 9110 9.3.6), not an empty string that would
// make the request line look malformed (CRS 920100).
func requestTarget(req RequestHead) string {
	if req.Path == "" && req.Method == "CONNECT" {
		return req.Authority
	}
	return req.Path
}

// isEventStream reports a server-sent event stream, which never ends as a
// body: the backend chose it, and only its headers are inspected (phase 3).
func isEventStream(contentType string) bool {
	mt, ok := mediaType(contentType)
	return ok && mt == "text/event-stream"
}

func hostWithoutPort(authority string) string {
	if host, _, err := net.SplitHostPort(authority); err == nil {
		return host
	}
	return authority
}

// SplitAddress parses an address attribute, which Envoy 1.40 gives with the
// port ("10.0.0.1:8080", "[::1]:8080") and earlier versions without ("::1").
// fallbackPort is called only when the attribute carries no port: reading
// the port attribute is one more call into Envoy, on every request.
func SplitAddress(addr string, fallbackPort func() int) (ip string, port int) {
	if host, p, err := net.SplitHostPort(addr); err == nil {
		if n, err := strconv.Atoi(p); err == nil {
			return host, n
		}
		return host, fallbackPort()
	}
	return strings.Trim(addr, "[]"), fallbackPort()
}
