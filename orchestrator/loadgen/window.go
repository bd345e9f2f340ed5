package loadgen

import (
	"context"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"fortio.org/fortio/periodic"
)

// Window is what happened inside a step's measured window, counted from
// each call's own timestamps rather than from Fortio's totals, which
// include the calls that were queued before the window and those that
// drained after it.
//
// Fortio runs open-ended at a fixed interval per connection, I = c/R, so
// call i of connection k is intended at start + k*I/c + i*I, and with
// catch-up a connection that fell behind sends its late calls back to
// back: every intended call is sent, late if need be, and its corrected
// latency runs from its intended time (a late start counts against it),
// as an open-loop client would see it. A saturated proxy therefore shows
// as fewer completions in the window and a corrected latency that grows
// across it, instead of as calls never sent and never timed (coordinated
// omission). Slots intended in the window but still unsent when the run
// stopped count as unsent, with the time until the stop as a lower bound
// of their latency.
type Window struct {
	// Start and End are the window's edges on the wall clock, for
	// matching them with other readings; Length is the window's length
	// measured on the monotonic clock where the window was. The two can
	// disagree: a window that crosses the wire (a Kubernetes target's
	// load generator) keeps only the wall clock, which a VM fork or an
	// NTP step can move by seconds.
	Start, End time.Time
	Length     time.Duration
	// Scheduled is TargetQPS * Length: the calls an open-loop client
	// would have started inside the window.
	Scheduled float64
	// Completed counts calls whose response (or socket error) arrived
	// inside the window, whatever their status; OK the 2xx among them.
	Completed, OK, Non2xx, SocketErrors int64
	// Intended counts the slots intended inside the window, Unsent those
	// of them that did not end in the run (never sent, or still in flight
	// when it stopped); see Answered.
	Intended, Unsent int64
	// Raw is latency from the actual send of the calls intended inside
	// the window; Corrected is from the intended send, unsent slots
	// included. Lateness is actual - intended send of the calls whose
	// connection was free at their intended time: what the load
	// generator itself (its scheduler, timer wake-ups, CPU) adds to
	// corrected latency, as opposed to waiting for the proxy.
	Raw, Corrected, Lateness Latency
	// FirstFifth and LastFifth are the corrected latency of the calls
	// intended in the window's first and last fifth: a proxy that keeps
	// up has the same median in both, one whose queue grows through the
	// window a higher one in the last (knee.Step's Sustained).
	FirstFifth, LastFifth Latency
	// RunDelaySeconds is how long the load generator's threads waited for
	// a CPU during the window: more than a little means it shared its
	// CPUs, and its lateness is not the proxy's doing.
	RunDelaySeconds float64
}

// Seconds is the window's length in seconds: Length, or End-Start for a
// window recorded before Length existed.
func (w Window) Seconds() float64 { return w.Duration().Seconds() }

// Duration is the window's length (see Seconds).
func (w Window) Duration() time.Duration {
	if w.Length > 0 {
		return w.Length
	}
	return w.End.Sub(w.Start)
}

// Answered counts the calls intended inside the window that ended (a
// response or a socket error) in the run, the tail included. Counted by
// intended time, a window's calls are credited to it however late they
// end, and the backlog of calls intended before it (the warm-up's queue
// of an overloaded proxy) never is, however many of them end inside it.
func (w Window) Answered() int64 { return w.Intended - w.Unsent }

// AchievedQPS is the rate of completed calls over the window.
func (w Window) AchievedQPS() float64 {
	if s := w.Seconds(); s > 0 {
		return float64(w.Completed) / s
	}
	return 0
}

// Latency holds exact percentiles (no histogram buckets) in milliseconds.
type Latency struct {
	Samples                            int64
	P50Ms, P90Ms, P99Ms, P999Ms, MaxMs float64
}

// call is one request as the recorder saw it. Times are nanoseconds since
// the recorder's epoch, which keeps the records small at 10k RPS.
type call struct {
	iter       int64
	start, end int64
	code       int
}

// recorder is Fortio's access logger: it keeps every call of the run, one
// slice per connection (Fortio calls it from each connection's goroutine,
// so no slice is shared), and tells when the first call starts.
type recorder struct {
	epoch   time.Time
	calls   [][]call
	started chan time.Time
	once    sync.Once
}

func newRecorder(connections int) *recorder {
	return &recorder{epoch: time.Now(), calls: make([][]call, connections), started: make(chan time.Time, 1)}
}

func (r *recorder) Start(ctx context.Context, _ periodic.ThreadID, _ int64, start time.Time) context.Context {
	r.once.Do(func() { r.started <- start })
	return ctx
}

func (r *recorder) Report(_ context.Context, id periodic.ThreadID, iter int64, start time.Time, latency float64, _ bool, details string) {
	code, err := strconv.Atoi(details)
	if err != nil {
		code = socketError
	}
	s := start.Sub(r.epoch).Nanoseconds()
	r.calls[id] = append(r.calls[id], call{iter: iter, start: s, end: s + int64(latency*1e9), code: code})
}

func (r *recorder) Info() string { return "wafsweep window recorder" }

// socketError is Fortio's status code for a call that got no response.
const socketError = -1

// window counts the recorded calls against the window [start, end) for a
// run at qps over the recorder's connections that was stopped at stopped.
func (r *recorder) window(qps float64, start, end, stopped time.Time) Window {
	return windowOf(start, end, qps, r.tally(qps, start, end, stopped))
}

// tally is what one recorder saw of a window: its counts and its latency
// samples (ns), kept apart so that the windows of runs sent together can
// be merged call by call (windowOf), not percentile by percentile.
type tally struct {
	completed, ok, non2xx, socketErrors, intended, unsent int64
	raw, corrected, lateness, firstFifth, lastFifth       []float64
}

// addCorrected adds the corrected latency of a call intended at at to
// the window's and, when at falls in the first or last fifth of the
// window [lo, hi), to that fifth's.
func (t *tally) addCorrected(at, lo, hi int64, latency float64) {
	t.corrected = append(t.corrected, latency)
	fifth := (hi - lo) / 5
	switch {
	case at < lo+fifth:
		t.firstFifth = append(t.firstFifth, latency)
	case at >= hi-fifth:
		t.lastFifth = append(t.lastFifth, latency)
	}
}

// windowOf is the window [start, end) of runs at a total rate qps, from
// each run's tally.
func windowOf(start, end time.Time, qps float64, tallies ...tally) Window {
	// Both edges carry this process's monotonic reading: Sub uses it.
	length := end.Sub(start)
	w := Window{Start: start, End: end, Length: length, Scheduled: qps * length.Seconds()}
	var raw, corrected, lateness, first, last []float64
	for _, t := range tallies {
		w.Completed, w.OK, w.Non2xx, w.SocketErrors = w.Completed+t.completed, w.OK+t.ok, w.Non2xx+t.non2xx, w.SocketErrors+t.socketErrors
		w.Intended, w.Unsent = w.Intended+t.intended, w.Unsent+t.unsent
		raw, corrected, lateness = append(raw, t.raw...), append(corrected, t.corrected...), append(lateness, t.lateness...)
		first, last = append(first, t.firstFifth...), append(last, t.lastFifth...)
	}
	w.Raw, w.Corrected, w.Lateness = latencyOf(raw), latencyOf(corrected), latencyOf(lateness)
	w.FirstFifth, w.LastFifth = latencyOf(first), latencyOf(last)
	return w
}

// tally counts the recorded calls against [start, end) as window does.
func (r *recorder) tally(qps float64, start, end, stopped time.Time) tally {
	var t tally
	lo, hi := start.Sub(r.epoch).Nanoseconds(), end.Sub(r.epoch).Nanoseconds()
	stop := stopped.Sub(r.epoch).Nanoseconds()
	interval := float64(len(r.calls)) / qps * 1e9 // per connection, ns
	runStart := r.runStart(interval)
	for conn, calls := range r.calls {
		first := runStart + interval*float64(conn)/float64(len(r.calls))
		intended := func(iter int64) int64 { return int64(math.Round(first + float64(iter)*interval)) }
		next := int64(0) // the first slot not yet sent
		for i, c := range calls {
			t.countCompletion(c, lo, hi)
			next = c.iter + 1
			at := intended(c.iter)
			if at < lo || at >= hi {
				continue
			}
			t.intended++
			t.raw = append(t.raw, float64(c.end-c.start))
			// A start a hair before the estimated intended time is the
			// estimate's error, not an early send.
			t.addCorrected(at, lo, hi, float64(c.end-min(at, c.start)))
			if i == 0 || calls[i-1].end <= at {
				t.lateness = append(t.lateness, float64(max(c.start-at, 0)))
			}
		}
		for slot := next; intended(slot) < hi; slot++ {
			if at := intended(slot); at >= lo {
				t.intended++
				t.unsent++
				t.addCorrected(at, lo, hi, float64(max(stop-at, 0)))
			}
		}
	}
	return t
}

// countCompletion adds c to the counts if it ended inside [lo, hi).
func (t *tally) countCompletion(c call, lo, hi int64) {
	if c.end < lo || c.end >= hi {
		return
	}
	t.completed++
	switch {
	case c.code == socketError:
		t.socketErrors++
	case c.code >= 200 && c.code <= 299:
		t.ok++
	default:
		t.non2xx++
	}
}

// runStart estimates when Fortio started its connections: connection k's
// first call (iter 0) was intended at runStart + k*interval/c, and each
// goroutine can only be late, so the earliest estimate is the best.
func (r *recorder) runStart(interval float64) float64 {
	best := math.Inf(1)
	for conn, calls := range r.calls {
		if len(calls) == 0 {
			continue
		}
		c := calls[0]
		t := float64(c.start) - float64(c.iter)*interval - interval*float64(conn)/float64(len(r.calls))
		best = min(best, t)
	}
	if math.IsInf(best, 1) {
		return 0
	}
	return best
}

// latencyOf computes exact percentiles of samples in nanoseconds.
func latencyOf(samples []float64) Latency {
	if len(samples) == 0 {
		nan := math.NaN()
		return Latency{P50Ms: nan, P90Ms: nan, P99Ms: nan, P999Ms: nan, MaxMs: nan}
	}
	slices.Sort(samples)
	at := func(p float64) float64 {
		// Nearest rank: the smallest sample with at least p% at or below it.
		rank := int(math.Ceil(p/100*float64(len(samples)))) - 1
		return samples[max(rank, 0)] / 1e6
	}
	return Latency{
		Samples: int64(len(samples)),
		P50Ms:   at(50), P90Ms: at(90), P99Ms: at(99), P999Ms: at(99.9),
		MaxMs: samples[len(samples)-1] / 1e6,
	}
}
