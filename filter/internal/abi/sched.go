package abi

/*
#include <stdint.h>
#include <time.h>

// The last time the calling thread moved its P's scheduling tick (see
// keepWorkerP): one per Envoy worker thread.
static __thread int64_t wafsweep_last_tick_ns;

static int wafsweep_tick_due(int64_t interval_ns) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	if (now - wafsweep_last_tick_ns < interval_ns) {
		return 0;
	}
	wafsweep_last_tick_ns = now;
	return 1;
}
*/
import "C"

import "runtime"

// tickInterval is how often a worker thread moves its P's scheduling tick:
// well under the Go runtime's 10 ms (forcePreemptNS), whatever sysmon's
// polling interval at the time.
const tickInterval = 4_000_000 // ns

// keepWorkerP keeps the Go runtime's monitor (sysmon) from taking the P of
// an Envoy worker thread every 10 ms, which costs more than the WAF's own
// work at moderate rates.
//
// An Envoy worker enters Go through cgo callbacks. Between them it is back
// in C, and the runtime counts its P as in a system call; the callbacks
// never pass through the scheduler, so the P's scheduling tick stands
// still. sysmon reads a tick that has not moved for 10 ms as a goroutine
// hogging its P, and takes the P even though the thread is not in Go at
// all. With every P idle, sysmon sleeps until the next system call or
// callback wakes it, and then polls every 20 µs for a millisecond before
// backing off. At 1,500 requests per second on one CPU it woke about 3,100
// times a second, preempting the worker each time: with this, about 150
// (measured per thread from /proc, headers-only tier), and the module's
// cost fell from 372-402 to 327 µs of proxy CPU per request.
//
// Yielding once in a while moves the tick (Gosched goes through the
// scheduler, which hands the locked callback goroutine back to its thread
// at once): a few microseconds every 4 ms of traffic on each worker.
func keepWorkerP() {
	if C.wafsweep_tick_due(tickInterval) != 0 {
		runtime.Gosched()
	}
}
