package offload

import (
	"sync"
	"sync/atomic"
	"testing"
)

// A task whose stream was abandoned while it waited in the queue is not
// run; the pool thread cleans the stream up instead.
func TestAbandonedTaskIsSkipped(t *testing.T) {
	p := New()
	defer func() { p.Close(); p.Wait() }()
	if err := p.Grow(1); err != nil {
		t.Logf("threads not niced: %v", err)
	}
	block, blocked := make(chan struct{}), make(chan struct{})
	if err := p.TrySubmit(func() { close(blocked); <-block }, 1); err != nil {
		t.Fatal(err)
	}
	<-blocked // the only thread is busy: the next task stays queued
	var c Claim
	var ran, cleaned atomic.Int32
	finished := make(chan struct{})
	if err := p.TrySubmit(func() {
		defer close(finished)
		if c.Start() {
			cleaned.Add(1)
			return
		}
		ran.Add(1)
		if c.Finish(func(bool) {}) {
			cleaned.Add(1)
		}
	}, 1); err != nil {
		t.Fatal(err)
	}
	if !c.Abandon() {
		t.Fatal("Abandon of a queued task: the pool thread must own its clean-up")
	}
	close(block)
	<-finished
	if ran.Load() != 0 || cleaned.Load() != 1 {
		t.Fatalf("ran %d times, cleaned up %d times; want 0 and 1", ran.Load(), cleaned.Load())
	}
	if !c.Done() {
		t.Fatal("a skipped task is done")
	}
}

// Whenever the stream ends, exactly one side cleans up, and a result is
// handed back only to a stream that is still there. Run with -race.
func TestClaimHasOneOwner(t *testing.T) {
	const rounds = 2000
	for i := range rounds {
		var c Claim
		var cleanups, handedBack atomic.Int32
		var wg sync.WaitGroup
		wg.Add(2)
		result := 0
		go func() { // the pool thread
			defer wg.Done()
			if c.Start() {
				cleanups.Add(1)
				return
			}
			if c.Finish(func(abandoned bool) {
				result = i
				if !abandoned {
					handedBack.Add(1)
				}
			}) {
				cleanups.Add(1)
			}
		}()
		ownedByPool := false
		go func() { // the worker: the stream ends
			defer wg.Done()
			if ownedByPool = c.Abandon(); !ownedByPool {
				cleanups.Add(1)
				if c.Done() && result != i {
					t.Errorf("round %d: result %d not visible to the worker", i, result)
				}
			}
		}()
		wg.Wait()
		if cleanups.Load() != 1 {
			t.Fatalf("round %d: %d clean-ups (abandon owned by pool: %v)", i, cleanups.Load(), ownedByPool)
		}
		if ownedByPool && handedBack.Load() != 0 {
			t.Fatalf("round %d: a result was handed back to an abandoned stream", i)
		}
	}
}
