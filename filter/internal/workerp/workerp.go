// Package workerp keeps the Go runtime cheap for threads it did not create:
// Envoy's workers, which enter Go only through cgo callbacks and hold a P
// while they are back in C.
package workerp

/*
#include <stdint.h>
#include <time.h>

// Per Envoy worker thread (see Keep): when it last yielded, when it
// last entered a hook, and the longest wait between hooks since it yielded.
static __thread int64_t wafsweep_last_yield_ns;
static __thread int64_t wafsweep_last_hook_ns;
static __thread int64_t wafsweep_longest_gap_ns;

static int wafsweep_yield_due(int64_t budget_ns) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	int64_t gap = now - wafsweep_last_hook_ns;
	wafsweep_last_hook_ns = now;
	if (gap > wafsweep_longest_gap_ns) {
		wafsweep_longest_gap_ns = gap;
	}
	if (now - wafsweep_last_yield_ns + wafsweep_longest_gap_ns < budget_ns) {
		return 0;
	}
	wafsweep_last_yield_ns = now;
	wafsweep_longest_gap_ns = gap;
	return 1;
}
*/
import "C"

import "runtime"

// yieldBudget bounds the time between two yields of a worker thread: under
// the 10 ms after which the Go runtime's monitor takes a P whose scheduling
// tick stands still (forcePreemptNS), with room for a late hook.
const yieldBudget = 8_000_000 // ns

// Keep keeps the Go runtime's monitor (sysmon) from taking the P of the
// calling C thread. The module calls it first in every hook that can begin
// a turn of the worker's event loop: each stream event and the scheduled
// resumption, not stream creation or destruction, which Envoy runs in the
// same turn as the request headers and the completion.
//
// A worker enters Go through cgo callbacks and keeps its P while it is back
// in C, where the runtime counts it as in a system call. The callbacks never
// pass through the scheduler, so the P's scheduling tick stands still, and
// after 10 ms sysmon reads that as a goroutine hogging its P and takes the
// P (one thread woken to run it). Worse, sysmon then polls every 20 µs for
// a millisecond and backs off only slowly: about 50 wake-ups, each one
// preempting the worker on its CPU. A yield (runtime.Gosched) moves the
// tick for about three wake-ups: the scheduler hands the locked callback
// goroutine to another thread and back.
//
// So the worker yields as seldom as it can without letting 10 ms pass
// unmoved: when the time since its last yield plus the longest wait between
// hooks seen since then would reach the budget by the next hook. A fixed
// period cannot do both: 4 ms yields twice as often as needed at 1,000
// requests per second, 8 ms lets the tick go stale below about 200.
// BenchmarkCallbackWakeups, context switches per request above a C hook
// that does nothing, at 150 / 500 / 1,000 requests per second: 3.9 / 1.2 /
// 0.55 with this, 3.8 / 1.5 / 0.84 with a fixed 4 ms.
//
// Waits longer than the budget (a worker idle for 10 ms) let sysmon take the
// P whatever the worker does; that happens only when it is idle anyway.
func Keep() {
	if C.wafsweep_yield_due(yieldBudget) != 0 {
		runtime.Gosched()
	}
}

// ProcsFor is the number of Ps the Go runtime needs so that every C thread
// calling in (Envoy's workers) and every inspection thread can hold one at
// once, plus one spare.
//
// A worker keeps its P while it is back in C between hooks. With no idle P
// elsewhere, sysmon takes that P as soon as it sees it unused for one of
// its polls (20 µs at first) and wakes a thread to run it: about one
// wake-up per request at moderate rates. In the harness of
// BenchmarkCallbackWakeups at 500 requests per second, a single P cost 3.4
// context switches and 70 µs of CPU per request above the C floor; with a
// spare, 1.5 and 8. With a spare P sysmon waits 10 ms. And a worker that
// enters Go with no P free would wait for one.
func ProcsFor(callers, poolThreads int) int {
	return max(callers, 1) + poolThreads + 1
}
