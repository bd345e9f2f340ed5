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
	"syscall"
)

// Niceness is the nice value of the pool's threads. At 10 a busy pool
// thread gets about a tenth of a CPU that a nice-0 thread also wants, which
// keeps workers responsive without starving inspection (a starved thread
// would also hold up the Go runtime's stop-the-world phases).
const Niceness = 10

// queuePerThread bounds the tasks waiting for a thread. A full queue makes
// TrySubmit fail, and the caller does the work itself: under overload the
// module degrades to inspecting in place, it does not pile up bodies.
const queuePerThread = 64

// ErrClosed is returned by TrySubmit after Close.
var ErrClosed = errors.New("offload pool is closed")

// ErrQueueFull is returned by TrySubmit when every thread is busy and the
// queue is full.
var ErrQueueFull = errors.New("offload queue is full")

// Pool is a fixed set of low-priority threads running submitted tasks in
// order. It is safe for concurrent use.
type Pool struct {
	tasks chan func()
	done  sync.WaitGroup

	mu     sync.RWMutex // guards closed against sends on a closed channel
	closed bool

	// priorityErr is why the threads could not be niced, if they could not
	// (seccomp, or a platform without per-thread priorities); they then run
	// at the caller's priority.
	priorityErr error
}

// New starts a pool of threads (at least one).
func New(threads int) *Pool {
	threads = max(threads, 1)
	p := &Pool{tasks: make(chan func(), threads*queuePerThread)}
	errs := make(chan error, threads)
	p.done.Add(threads)
	for range threads {
		go p.run(errs)
	}
	for range threads {
		if err := <-errs; err != nil && p.priorityErr == nil {
			p.priorityErr = err
		}
	}
	return p
}

// PriorityErr reports why the threads run at normal priority, or nil.
func (p *Pool) PriorityErr() error { return p.priorityErr }

// TrySubmit queues task for a pool thread, or reports why it cannot; it
// never blocks. A task must not panic: recover inside it.
func (p *Pool) TrySubmit(task func()) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrClosed
	}
	select {
	case p.tasks <- task:
		return nil
	default:
		return ErrQueueFull
	}
}

// Close stops taking tasks; the threads finish the queued ones, then end.
// It does not wait (see Wait) and is safe to call more than once.
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
