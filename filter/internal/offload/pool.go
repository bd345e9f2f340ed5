// Package offload runs expensive work on a fixed set of OS threads whose
// scheduling priority is below the caller's.
//
// corazawaf uses it to inspect large request bodies away from Envoy's worker
// threads: a worker hands the inspection over and goes back to its other
// streams, and because the pool's threads are niced, the kernel runs the
// workers' short jobs first whenever both want a CPU. Large bodies get the
// CPU time left over, which is what a capacity plan should see.
package offload

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
)

// Niceness is the nice value of the pool's threads. At 10 a busy pool
// thread gets about a tenth of a CPU that a nice-0 thread also wants, which
// keeps workers responsive without starving inspection (a starved thread
// would also hold up the Go runtime's stop-the-world phases).
const Niceness = 10

// MaxQueueLength bounds the queue length a caller may ask TrySubmit for.
const MaxQueueLength = 4096

// ErrClosed is returned by TrySubmit after Close.
var ErrClosed = errors.New("offload pool is closed")

// ErrQueueFull is returned by TrySubmit when every thread is busy and the
// queue is full.
var ErrQueueFull = errors.New("offload queue is full")

// Pool is a set of low-priority threads running submitted tasks in order.
// It only grows: corazawaf keeps one for the life of the process, because
// filter configs come and go with every listener update, and a thread that
// ends while Envoy exits would race the process's teardown. It is safe for
// concurrent use.
type Pool struct {
	tasks  chan func()
	queued atomic.Int64 // tasks submitted and not yet taken by a thread
	done   sync.WaitGroup

	mu      sync.RWMutex // guards the fields below; a send holds it for reading
	threads int
	closed  bool
	// priorityErr is why threads could not be niced, if they could not
	// (seccomp, or a platform without per-thread priorities); they then run
	// at the caller's priority.
	priorityErr error
}

// New returns a pool without threads; Grow starts them.
func New() *Pool {
	return &Pool{tasks: make(chan func(), MaxQueueLength)}
}

// Grow starts threads until the pool has at least n. It returns the first
// error met lowering a new thread's priority; the thread runs anyway.
func (p *Pool) Grow(n int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	started := make(chan error, max(n-p.threads, 0))
	for ; p.threads < n; p.threads++ {
		p.done.Add(1)
		go p.run(started)
	}
	for range cap(started) {
		if err := <-started; err != nil && p.priorityErr == nil {
			p.priorityErr = err
		}
	}
	return p.priorityErr
}

// Threads is the number of threads started.
func (p *Pool) Threads() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.threads
}

// TrySubmit queues task for a pool thread, unless maxQueued tasks (at most
// MaxQueueLength) already wait for one; it never blocks. A full queue is
// the caller's to answer: under overload work is refused, never piled up.
// A task must not panic: recover inside it.
func (p *Pool) TrySubmit(task func(), maxQueued int) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	switch {
	case p.closed:
		return ErrClosed
	case p.threads == 0:
		return ErrQueueFull // nobody would run it
	}
	if p.queued.Add(1) > int64(min(maxQueued, MaxQueueLength)) {
		p.queued.Add(-1)
		return ErrQueueFull
	}
	select {
	case p.tasks <- task:
		return nil
	default: // never: the channel holds MaxQueueLength
		p.queued.Add(-1)
		return ErrQueueFull
	}
}

// Queued is the number of tasks waiting for a thread.
func (p *Pool) Queued() int { return int(p.queued.Load()) }

// Close stops taking tasks; the threads finish the queued ones, then end.
// It does not wait (see Wait) and is safe to call more than once. Tests use
// it; the module never closes its pool.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.tasks)
	}
}

// Wait returns when the threads have ended, after Close.
func (p *Pool) Wait() { p.done.Wait() }

// run is one pool thread. It keeps its goroutine on one OS thread so that
// the thread's priority applies to the tasks; when the goroutine returns
// still locked, the runtime ends the thread (or, for the main thread, parks
// it for good), so the lowered priority never leaks to other Go code.
func (p *Pool) run(started chan<- error) {
	defer p.done.Done()
	runtime.LockOSThread()
	started <- lowerPriority()
	for task := range p.tasks {
		p.queued.Add(-1)
		task()
	}
}

// lowerPriority nices the calling thread. On Linux, PRIO_PROCESS with a
// thread id sets that thread's nice value alone.
func lowerPriority() error {
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), Niceness); err != nil {
		return fmt.Errorf("setting the nice value of inspection thread %d to %d: %w", syscall.Gettid(), Niceness, err)
	}
	return nil
}
