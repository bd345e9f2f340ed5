package waf

import (
	"strconv"

	"github.com/corazawaf/coraza/v3/types"
)

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
