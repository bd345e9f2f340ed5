package waf

import (
	"strings"
)

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
