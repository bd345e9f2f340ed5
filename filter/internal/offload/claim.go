package offload

import "sync"

// Claim settles who owns a task's stream between the thread that submitted
// it (an Envoy worker) and the pool thread that runs it, when the stream can
// end (a client gone, a timeout) at any moment in between.
//
// Until the task is done, the pool thread owns the stream. If the submitter
// abandons it first, the pool thread cleans the stream up: at Start, before
// running the task (the work is skipped: nobody wants its result, and a
// client must not be able to queue inspections for streams it has already
// dropped), or at Finish. Once the task is done, the submitter owns the
// stream again. Exactly one side cleans up.
type Claim struct {
	mu        sync.Mutex
	done      bool
	abandoned bool
}

// Start is called by the pool thread before running the task. It reports
// whether the submitter abandoned the stream while the task was queued; the
// pool thread then skips the task, cleans up, and does not call Finish.
func (c *Claim) Start() (abandoned bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.abandoned {
		c.done = true
	}
	return c.abandoned
}

// Finish is called by the pool thread after running the task. record runs
// under the claim's lock, told whether the stream was abandoned meanwhile:
// it stores the result and, if not abandoned, hands the stream back (the
// lock keeps an abandon from slipping in between the check and the handing
// back). Finish reports abandoned: the pool thread then cleans up.
func (c *Claim) Finish(record func(abandoned bool)) (abandoned bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	record(c.abandoned)
	return c.abandoned
}

// Abandon is called by the submitter when the stream ends. It reports
// whether the pool thread still owns the stream (and will clean it up);
// false means the task is done and the submitter cleans up itself.
func (c *Claim) Abandon() (ownedByPool bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return false
	}
	c.abandoned = true
	return true
}

// Done reports whether the task is done. Observing true orders everything
// record stored before the caller's next reads.
func (c *Claim) Done() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}
