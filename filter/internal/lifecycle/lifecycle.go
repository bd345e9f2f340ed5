// Package lifecycle is the life of one HTTP stream as the module sees it:
// whether a hook may touch the WAF, who owns the stream while its request
// body is inspected away from Envoy's worker thread, whether a reply is
// still owed after a panic, and who closes the transaction when Envoy
// completes the stream. It is one small state machine per stream, kept
// apart from the cgo binding so that every transition can be walked by a
// plain test (see Transitions).
//
// A Stream is owned by Envoy's worker thread. The one hand-over is
// Abandoned: the worker records it before telling the inspection thread
// (offload.Claim), whose lock orders the two.
package lifecycle

import "fmt"

// Phase is where a stream is in its life.
type Phase uint8

const (
	// New: created; request headers not seen yet. Nothing is inspected:
	// a response Envoy sends before them (its own local reply) passes.
	New Phase = iota
	// Open: the transaction runs; hooks inspect what the WAF asks for.
	Open
	// OffWorker: the request's phase 2 runs on an inspection thread. The
	// stream is the thread's: worker hooks hold data and leave the WAF
	// alone until Resume.
	OffWorker
	// Replied: the module answered the stream with a local reply; nothing
	// more is inspected (the reply itself passes the response hooks).
	Replied
	// Failed: a hook panicked. Every later hook takes the failure mode's
	// path without touching the WAF, and the panic is logged once.
	Failed
	// FailedOffWorker: a worker hook panicked while an inspection thread
	// owned the stream. The thread keeps it until Resume, whose verdict is
	// then dropped for the failure mode's answer.
	FailedOffWorker
	// Complete: Envoy completed the stream; the worker ended the
	// transaction (its logging phase, or a bare close after a failure).
	Complete
	// Abandoned: Envoy completed the stream while an inspection thread
	// owned it. That thread ends the transaction; the worker must not.
	Abandoned
)

var phaseNames = [...]string{"new", "open", "off_worker", "replied", "failed", "failed_off_worker", "complete", "abandoned"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", p)
}

// Event is something that happens to a stream.
type Event uint8

const (
	// Start: request headers arrived and the transaction started.
	Start Event = iota
	// Defer: the request's phase 2 was handed to an inspection thread.
	Defer
	// Resume: the inspection's verdict is back on the worker.
	Resume
	// Reply: the module sent a local reply for the stream.
	Reply
	// Panic: a hook, or an inspection thread, panicked.
	Panic
	// End: Envoy completed the stream (stream_complete, or destroy when
	// it never reported completion).
	End
)

var eventNames = [...]string{"start", "defer", "resume", "reply", "panic", "end"}

func (e Event) String() string {
	if int(e) < len(eventNames) {
		return eventNames[e]
	}
	return fmt.Sprintf("event(%d)", e)
}

// Transitions is the whole machine: for each phase, the phase each event
// leads to. An event missing from a phase's row cannot happen there; Next
// refuses it, which a hook's panic barrier turns into the failure mode.
var Transitions = map[Phase]map[Event]Phase{
	New: {
		Start: Open,
		Panic: Failed, // before or while the transaction starts
		End:   Complete,
	},
	Open: {
		Defer: OffWorker,
		Reply: Replied,
		Panic: Failed,
		End:   Complete,
	},
	OffWorker: {
		Resume: Open, // its verdict, a reply or a panic included, is acted on from Open
		Panic:  FailedOffWorker,
		End:    Abandoned,
	},
	Replied: {
		Panic: Failed, // e.g. in stream_complete: the transaction still needs closing
		End:   Complete,
	},
	Failed: {
		Panic: Failed, // a later hook's panic: logged, answered already
		End:   Complete,
	},
	FailedOffWorker: {
		Resume: Failed,
		Panic:  FailedOffWorker,
		End:    Abandoned,
	},
	Complete: {
		Panic: Complete, // in stream_complete, or after it: nothing left to answer
		End:   Complete, // destroy after stream_complete
	},
	Abandoned: {
		Panic: Abandoned,
		End:   Abandoned, // destroy after stream_complete
	},
}

// Stream is one stream's lifecycle. The zero value is a New stream.
type Stream struct {
	phase Phase
	// replied is true once a local reply went out, whatever came after:
	// a panic after a reply must not send a second one.
	replied bool
	// panicked is true after the first panic, which alone is logged.
	panicked bool
	limit    bufferLimit
}

// Phase is the stream's phase.
func (s *Stream) Phase() Phase { return s.phase }

// Next moves the stream on by e, or returns an error naming the refused
// transition and leaves the stream as it was.
func (s *Stream) Next(e Event) error {
	next, ok := Transitions[s.phase][e]
	if !ok {
		return fmt.Errorf("stream lifecycle: %s cannot happen while %s", e, s.phase)
	}
	s.phase = next
	switch e {
	case Reply:
		s.replied = true
	case Panic:
		s.panicked = true
	}
	return nil
}

// Failure is what a panic leaves the barrier to do.
type Failure struct {
	// First: the stream's first panic, the one logged with its stack.
	First bool
	// Counted: it goes into the error counter (Envoy's stats are out of
	// reach once the stream completed).
	Counted bool
	// ReplyOwed: under fail-closed, the failure reply is still to be sent:
	// nothing answered the stream and Envoy has not completed it.
	ReplyOwed bool
}

// Fail records a panic (every phase takes one) and says what is left to do.
func (s *Stream) Fail() Failure {
	f := Failure{First: !s.panicked, Counted: !s.panicked && !s.Ended(), ReplyOwed: !s.replied && !s.Ended()}
	if err := s.Next(Panic); err != nil {
		panic(err) // Transitions lists Panic for every phase (a test checks)
	}
	if f.ReplyOwed {
		s.replied = true // the caller sends it, or lets the stream through (fail-open)
	}
	return f
}

// Failed reports whether hooks take the failure mode's path: a panic
// broke the inspection, and Envoy has not completed the stream.
func (s *Stream) Failed() bool { return s.phase == Failed || s.phase == FailedOffWorker }

// Broken reports whether a panic ever broke the inspection, after the
// stream ended too: its transaction is then closed without the logging
// phase, which would run on a transaction left half-way.
func (s *Stream) Broken() bool { return s.panicked }

// Inspects reports whether hooks hand data to the WAF: the transaction
// runs and no reply, failure or inspection thread has taken the stream.
func (s *Stream) Inspects() bool { return s.phase == Open }

// OwnedByInspectionThread reports whether the request's phase 2 is running
// away from the worker: the worker then holds the stream's data, and the
// thread ends the transaction if Envoy completes the stream first.
func (s *Stream) OwnedByInspectionThread() bool {
	return s.phase == OffWorker || s.phase == FailedOffWorker || s.phase == Abandoned
}

// Ended reports whether Envoy completed the stream.
func (s *Stream) Ended() bool { return s.phase == Complete || s.phase == Abandoned }

// bufferLimit is Envoy's per-stream buffer limit while a body is held: the
// filter raises it to hold a body whole for inspection, and puts Envoy's
// own back once the body is released, so that flow control (not a
// WAF-sized buffer) paces the rest of a large body. The limit cannot drop
// in the hook that releases the body (Envoy still holds it and would
// answer 413), so the restore is due at the next frame.
type bufferLimit struct {
	previous   uint64 // Envoy's limit before the raise; 0: not raised
	restoreDue bool
}

// Raised records that holding a body raised the buffer limit from
// previous (0: it was high enough already).
func (s *Stream) Raised(previous uint64) {
	if previous != 0 {
		s.limit.previous = previous
	}
}

// Released records that the verdict let the held data go.
func (s *Stream) Released() { s.limit.restoreDue = s.limit.previous != 0 }

// RestoreDue returns the limit to put back at this frame, once.
func (s *Stream) RestoreDue() (limit uint64, due bool) {
	if !s.limit.restoreDue {
		return 0, false
	}
	limit = s.limit.previous
	s.limit = bufferLimit{}
	return limit, true
}
