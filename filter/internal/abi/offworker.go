package abi

/*
#include "glue.h"
*/
import "C"

import (
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/wafsweep/wafsweep/filter/internal/cpulimit"
	"github.com/wafsweep/wafsweep/filter/internal/lifecycle"
	"github.com/wafsweep/wafsweep/filter/internal/offload"
	"github.com/wafsweep/wafsweep/filter/internal/workerp"
	"github.com/wafsweep/wafsweep/filter/waf"
)

// A request body's phase 2 can cost hundreds of milliseconds of CPU under
// the full CRS. Run on Envoy's worker thread, it would stall every other
// stream of that worker for as long. So when package waf defers it, the
// body hook hands it to the filter config's offload pool and holds the
// stream; the pool thread runs it and commits an event to Envoy's scheduler
// for the stream, and on_http_filter_scheduled, back on the worker, acts on
// the verdict and resumes (or answers) the stream.
//
// While an inspection is in flight its stream belongs to the pool thread:
// worker hooks leave the stream alone (its lifecycle says so), and if
// Envoy completes the stream first (a reset, a timeout), whoever finishes
// last of the two closes the transaction (offload.Claim); an inspection
// still queued then is skipped.

// inspection is one deferred request inspection. The claim says who owns
// the stream; result and panicked are set when the claim is done.
// workerBroken is set by the worker before it abandons the stream: a panic
// on the worker broke the stream's inspection, so the pool thread closes
// the transaction without its logging phase.
type inspection struct {
	claim        offload.Claim
	result       waf.Decision
	panicked     *offWorkerPanic
	workerBroken bool
}

// offWorkerPanic carries a panic from a pool thread to the worker, with
// the stack of where it happened.
type offWorkerPanic struct {
	value any
	stack []byte
}

func (p *offWorkerPanic) String() string {
	return fmt.Sprintf("%v (on an inspection thread)\n%s", p.value, p.stack)
}

// inspectionPool is the process's one pool of inspection threads, shared by
// every filter config and never closed (see offload.Pool), with the CPUs the
// process may use, read once.
var inspectionPool struct {
	once sync.Once
	pool *offload.Pool
	cpus cpulimit.Limit
}

// offloadPool returns the shared pool, grown to the threads a filter
// config asks for (by default one per CPU Envoy may use: its affinity,
// capped by its cgroup's quota), or nil when the config keeps inspection in
// place. The Go runtime gets enough Ps for Envoy's workers to call in while
// every inspection thread runs Go code (see workerp.ProcsFor): a worker waiting for
// a P would be the very stall the pool exists to avoid.
func offloadPool(settings waf.OffWorker) *offload.Pool {
	if settings.Enabled == nil || !*settings.Enabled {
		return nil
	}
	inspectionPool.once.Do(func() {
		inspectionPool.pool = offload.New()
		inspectionPool.cpus = cpulimit.Current()
		logInfo("inspection threads sized for %v", inspectionPool.cpus)
	})
	pool, cpus := inspectionPool.pool, inspectionPool.cpus.CPUs()
	threads := settings.Threads
	if threads == 0 {
		threads = cpus
	}
	if err := pool.Grow(threads); err != nil {
		logError("inspection threads run at normal priority: %v", err)
	}
	sizeProcs(pool.Threads())
	return pool
}

// settle turns a Defer decision into one the hook can act on: Hold when a
// pool thread took the inspection, the failure mode's answer when none
// could (every thread busy and the queue full). Inspecting in place instead
// would hand a client that floods expensive bodies Envoy's worker threads.
func (f *httpFilter) settle(s stream, d waf.Decision) waf.Decision {
	if d.Action != waf.Defer {
		return d
	}
	if f.offload(s, d.Deferred) {
		return waf.Decision{Action: waf.Hold}
	}
	return f.stream.Overloaded()
}

// offload hands work to the pool and reports whether it took it.
func (f *httpFilter) offload(s stream, work func() waf.Decision) bool {
	pool := f.config.pool
	if pool == nil {
		return false
	}
	scheduler := C.envoy_dynamic_module_callback_http_filter_scheduler_new(s.ptr)
	in := &inspection{}
	if err := pool.TrySubmit(func() { f.inspect(in, work, scheduler) }, f.config.settings.OffWorker.QueueLength); err != nil {
		C.envoy_dynamic_module_callback_http_filter_scheduler_delete(scheduler)
		return false
	}
	// The resumption runs on this worker, after this hook: the thread may
	// have begun, but the worker's view changes here.
	f.inspection = in
	f.next(lifecycle.Defer)
	f.config.metrics.countOffWorker(s, "pool")
	return true
}

// inspect runs on a pool thread. It must not call Envoy back for the
// stream, except through the scheduler.
func (f *httpFilter) inspect(in *inspection, work func() waf.Decision, scheduler C.envoy_dynamic_module_type_http_filter_scheduler_module_ptr) {
	defer C.envoy_dynamic_module_callback_http_filter_scheduler_delete(scheduler)
	if in.claim.Start() {
		// Envoy completed the stream while it waited in the queue: its
		// phase 2 would be work for nobody, and a client could queue
		// inspections of bodies it sends and drops at once.
		if (envoyLogger{}).Enabled(waf.LevelDebug) {
			envoyLogger{}.Log(waf.LevelDebug, "[corazawaf] queued inspection skipped: the stream ended first")
		}
		f.endTransaction(in.workerBroken) // its metrics are lost with the stream
		return
	}
	result, panicked := runRecovered(work)
	if f.commit(in, result, panicked, scheduler) {
		// Envoy completed the stream meanwhile; after a panic the
		// transaction is closed without the logging phase.
		f.endTransaction(panicked != nil || in.workerBroken)
	}
}

// commit records the inspection's outcome and, unless Envoy has completed
// the stream, schedules its resumption; it reports whether the stream was
// abandoned. The commit happens under the claim's lock, which the
// worker takes when the stream completes: Envoy's scheduler keeps a plain
// reference to the worker's dispatcher, so a commit must never come after
// the stream's completion, when that worker may already be gone (Envoy
// shutting down). Unlocked, a niced pool thread could be preempted between
// reading "not abandoned" and committing for as long as the kernel likes.
func (f *httpFilter) commit(in *inspection, result waf.Decision, panicked *offWorkerPanic,
	scheduler C.envoy_dynamic_module_type_http_filter_scheduler_module_ptr) (abandoned bool) {
	return in.claim.Finish(func(abandoned bool) {
		in.result, in.panicked = result, panicked
		if !abandoned {
			C.envoy_dynamic_module_callback_http_filter_scheduler_commit(scheduler, 0)
		}
	})
}

// runRecovered runs work, turning a panic into a value: an unrecovered
// panic on a pool thread would end the Envoy process.
func runRecovered(work func() waf.Decision) (d waf.Decision, p *offWorkerPanic) {
	defer func() {
		if r := recover(); r != nil {
			p = &offWorkerPanic{value: r, stack: debug.Stack()}
		}
	}()
	return work(), nil
}

// abandonInspection is called when Envoy completes a stream an inspection
// thread owns. It reports whether the thread still owns it (and then
// closes it); false when the thread was done.
func (f *httpFilter) abandonInspection() (ownedByPool bool) {
	in := f.inspection
	in.workerBroken = f.life.Broken() // read by the thread after Abandon's lock
	if in.claim.Abandon() {
		return true
	}
	f.inspection = nil
	return false
}

// resume acts, on the worker, on the verdict of an inspection that ran on a
// pool thread, and lets the request go on unless it was answered.
func (f *httpFilter) resume(s stream) {
	in := f.inspection
	if !f.life.OwnedByInspectionThread() || f.life.Ended() || !in.claim.Done() {
		return // never: the pool schedules resumption once done, and only then
	}
	f.inspection = nil
	f.next(lifecycle.Resume)
	if f.life.Failed() {
		// A worker hook panicked meanwhile; the failure mode answered
		// then (fail-closed), or lets the request through now (fail-open).
		if failOpen(f) {
			s.continueDecoding()
		}
		return
	}
	result, panicked := in.result, in.panicked
	if panicked != nil {
		if onPanic(f, s, "off_worker", panicked, false, true) {
			s.continueDecoding()
		}
		return
	}
	if f.apply(s, result) == waf.Continue {
		s.continueDecoding()
	}
}

//export envoy_dynamic_module_on_http_filter_scheduled
func envoy_dynamic_module_on_http_filter_scheduled(envoyPtr C.envoy_dynamic_module_type_http_filter_envoy_ptr,
	modulePtr C.envoy_dynamic_module_type_http_filter_module_ptr, _ C.uint64_t) {
	workerp.Keep()
	s := stream{envoyPtr}
	var f *httpFilter
	defer func() {
		if r := recover(); r != nil && onPanic(f, s, "scheduled", r, false, true) {
			s.continueDecoding()
		}
	}()
	f = objectOf[httpFilter](modulePtr)
	f.resume(s)
}
