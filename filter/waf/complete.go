package waf

import (
	"fmt"
	"strings"
	"time"
)

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
