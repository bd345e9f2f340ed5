package waf

import (
	"time"

	"github.com/corazawaf/coraza/v3/types"
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
	injectedPairs(req.Path, func(pair string) { s.tx.AddRequestHeader(QueryPairHeader, pair) })
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
