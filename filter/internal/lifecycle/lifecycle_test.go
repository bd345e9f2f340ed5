package lifecycle

import (
	"slices"
	"testing"
)

var (
	allPhases = []Phase{New, Open, OffWorker, Replied, Failed, FailedOffWorker, Complete, Abandoned}
	allEvents = []Event{Start, Defer, Resume, Reply, Panic, End}
)

// The barrier and completion are never refused: every phase takes a panic
// and Envoy's completion.
func TestEveryPhaseTakesPanicAndEnd(t *testing.T) {
	if len(Transitions) != len(allPhases) {
		t.Fatalf("Transitions has %d phases, the test knows %d", len(Transitions), len(allPhases))
	}
	for _, p := range allPhases {
		for _, e := range []Event{Panic, End} {
			if _, ok := Transitions[p][e]; !ok {
				t.Errorf("%s refuses %s", p, e)
			}
		}
	}
}

// What the rest of the module relies on, checked on every transition.
func TestTransitionsKeepTheInvariants(t *testing.T) {
	for _, p := range allPhases {
		for e, next := range Transitions[p] {
			s := Stream{phase: p}
			owned := s.OwnedByInspectionThread()
			if err := s.Next(e); err != nil || s.phase != next {
				t.Fatalf("%s --%s--> %s: got %s, %v", p, e, next, s.phase, err)
			}
			switch {
			case (p == Complete || p == Abandoned) && next != p:
				t.Errorf("%s --%s--> %s: an ended stream changed phase", p, e, next)
			case e == End && !s.Ended():
				t.Errorf("%s --end--> %s: not ended", p, next)
			case owned && e == End && next != Abandoned:
				// The worker would close a transaction the thread still uses.
				t.Errorf("%s --end--> %s: completed under an inspection thread, want abandoned", p, next)
			case owned && !s.OwnedByInspectionThread() && e != Resume:
				t.Errorf("%s --%s--> %s: left the inspection thread without its verdict", p, e, next)
			case e == Reply && p != Open:
				t.Errorf("%s --reply--> %s: only an inspected stream is answered by a reply of the WAF's", p, next)
			case s.Inspects() && e != Start && e != Resume:
				t.Errorf("%s --%s--> %s: inspection started again", p, e, next)
			}
		}
	}
}

func TestEveryPhaseIsReachable(t *testing.T) {
	seen := map[Phase]bool{New: true}
	for frontier := []Phase{New}; len(frontier) > 0; {
		p := frontier[0]
		frontier = frontier[1:]
		for _, next := range Transitions[p] {
			if !seen[next] {
				seen[next] = true
				frontier = append(frontier, next)
			}
		}
	}
	for _, p := range allPhases {
		if !seen[p] {
			t.Errorf("%s is never reached", p)
		}
	}
}

func TestNextRefusesWhatCannotHappen(t *testing.T) {
	s := Stream{phase: OffWorker}
	err := s.Next(Reply)
	if err == nil || err.Error() != "stream lifecycle: reply cannot happen while off_worker" || s.phase != OffWorker {
		t.Errorf("reply while off worker: %v, phase %s", err, s.phase)
	}
}

// Streams as Envoy drives them, hook by hook.
func TestStreams(t *testing.T) {
	tests := []struct {
		name     string
		events   []Event
		want     Phase
		failures []Failure // what each Panic leaves to do, in order
	}{
		{"a request passed", []Event{Start, End}, Complete, nil},
		{"a request blocked", []Event{Start, Reply, End}, Complete, nil},
		{"a body inspected off the worker", []Event{Start, Defer, Resume, End}, Complete, nil},
		{"blocked off the worker", []Event{Start, Defer, Resume, Reply, End}, Complete, nil},
		{"reset while inspected off the worker", []Event{Start, Defer, End, End}, Abandoned, nil},
		{"Envoy's own reply before request headers", []Event{End}, Complete, nil},
		{"a panic in request headers", []Event{Panic, End}, Complete, []Failure{{First: true, Counted: true, ReplyOwed: true}}},
		{"a panic, then another", []Event{Start, Panic, Panic, End}, Complete,
			[]Failure{{First: true, Counted: true, ReplyOwed: true}, {}}},
		{"a panic after a reply", []Event{Start, Reply, Panic, End}, Complete, []Failure{{First: true, Counted: true}}},
		{"a panic in stream_complete", []Event{Start, End, Panic}, Complete, []Failure{{First: true}}},
		{"a panic in the inspection", []Event{Start, Defer, Resume, Panic, End}, Complete,
			[]Failure{{First: true, Counted: true, ReplyOwed: true}}},
		{"a worker hook's panic while the thread inspects", []Event{Start, Defer, Panic, Resume, End}, Complete,
			[]Failure{{First: true, Counted: true, ReplyOwed: true}}},
		{"a worker hook's panic, then a reset", []Event{Start, Defer, Panic, End}, Abandoned,
			[]Failure{{First: true, Counted: true, ReplyOwed: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s Stream
			var failures []Failure
			for _, e := range tc.events {
				if e == Panic {
					failures = append(failures, s.Fail())
					continue
				}
				if err := s.Next(e); err != nil {
					t.Fatal(err)
				}
			}
			if s.Phase() != tc.want || !slices.Equal(failures, tc.failures) {
				t.Errorf("phase %s, failures %+v; want %s, %+v", s.Phase(), failures, tc.want, tc.failures)
			}
		})
	}
}

// Every sequence of up to six events: the stream is answered at most once
// (a WAF reply or a failure reply), and never inspects after it ended.
func TestEverySequenceAnswersAtMostOnce(t *testing.T) {
	var walk func(s Stream, depth, answers int)
	walk = func(s Stream, depth, answers int) {
		if answers > 1 {
			t.Fatalf("answered %d times", answers)
		}
		if depth == 0 {
			return
		}
		for _, e := range allEvents {
			next, a := s, answers
			if e == Panic {
				if next.Fail().ReplyOwed {
					a++
				}
			} else if err := next.Next(e); err != nil {
				continue
			} else if e == Reply {
				a++
			}
			if s.Ended() && (next.Inspects() || !next.Ended()) {
				t.Fatalf("%s --%s--> %s: an ended stream came back", s.phase, e, next.phase)
			}
			walk(next, depth-1, a)
		}
	}
	walk(Stream{}, 6, 0)
}

func TestBufferLimitIsRestoredOnceAfterTheRelease(t *testing.T) {
	var s Stream
	if _, due := s.RestoreDue(); due {
		t.Fatal("restore due before any raise")
	}
	s.Raised(0) // high enough already: nothing to restore
	s.Released()
	if _, due := s.RestoreDue(); due {
		t.Fatal("restore due without a raise")
	}
	s.Raised(16384)
	if _, due := s.RestoreDue(); due {
		t.Fatal("restore due while the body is held")
	}
	s.Released()
	if limit, due := s.RestoreDue(); !due || limit != 16384 {
		t.Errorf("restore %d %v, want Envoy's 16384", limit, due)
	}
	if _, due := s.RestoreDue(); due {
		t.Error("restored twice")
	}
}

// A broken stream stays broken once ended: its transaction is closed
// without the logging phase.
func TestBrokenOutlivesTheEnd(t *testing.T) {
	var s Stream
	for _, e := range []Event{Start, Panic, End} {
		if e == Panic {
			s.Fail()
		} else if err := s.Next(e); err != nil {
			t.Fatal(err)
		}
	}
	if !s.Broken() || s.Failed() || !s.Ended() {
		t.Errorf("broken %v, failed %v, ended %v: want broken and ended", s.Broken(), s.Failed(), s.Ended())
	}
}
