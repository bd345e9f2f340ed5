package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"sync"
	"syscall"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/periodic"
	"fortio.org/log"

	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// resolutionSeconds is the latency histogram's bucket width: Fortio's 1 ms
// default is too coarse for sub-millisecond proxy latency.
const resolutionSeconds = 1e-4

// percentiles Run asks Fortio for; Result names them.
var percentiles = []float64{50, 90, 99, 99.9}

// Result is one step's outcome.
type Result struct {
	// The counts, rate and latency below are the window's (latency
	// corrected); Fortio's count of the whole run is RunCompleted.
	TargetQPS float64
	ActualQPS float64
	Duration  time.Duration // measured time
	Scheduled int64         // calls scheduled in it
	Completed int64         // calls completed in it, whatever their outcome
	// RunCompleted is every call the run made, warm-up and tail included.
	RunCompleted  int64
	Non2xx        int64 // responses outside 200-299 (socket errors excluded)
	SocketErrors  int64 // calls that got no HTTP response
	SocketsOpened int64 // connections opened; above Connections means reconnects
	// Codes counts the run's calls by status (Fortio's, warm-up and tail
	// included); -1 is Fortio's code for a socket error.
	Codes                              map[int]int64
	P50Ms, P90Ms, P99Ms, P999Ms, MaxMs float64
	// LoadgenCPUSeconds is this process's CPU (user+system) during the
	// measured window, read at its edges: divided by the window, it is
	// the share of its CPUs the load generator used there (over the whole
	// run, warm-up and tail included, it read 1.3-1.4 times too high).
	// Fortio runs in-process, so anything else the process does is
	// included: keep the process otherwise idle during a step.
	LoadgenCPUSeconds float64
	// RawJSON is Fortio's result JSON without the base64 request payload.
	RawJSON []byte
	// Window is the measured window, counted call by call: what a step's
	// verdict rests on (the sweep refuses a result without one).
	Window *Window
}

// CompletionRatio is Completed/Scheduled, the capacity signal.
func (r Result) CompletionRatio() float64 {
	if r.Scheduled == 0 {
		return 0
	}
	return float64(r.Completed) / float64(r.Scheduled)
}

// ErrorRatio is (Non2xx+SocketErrors)/Completed.
func (r Result) ErrorRatio() float64 {
	if r.Completed == 0 {
		return 0
	}
	return float64(r.Non2xx+r.SocketErrors) / float64(r.Completed)
}

// tailAfterWindow keeps the load on after the window ends, so that the
// calls intended at its end meet the same queue as the ones before them
// instead of an emptying proxy.
const tailAfterWindow = time.Second

// Run validates spec, checks the target accepts connections, then drives
// the load: spec.Warmup, then the measured window of spec.Duration, then a
// short tail. Result.Window counts what happened inside the window (see
// Window); spec.OnEdge is called at its two edges, for the caller to
// sample the proxy at the same instants. Cancelling ctx stops the load
// early and returns the partial result with ctx's error.
func Run(ctx context.Context, spec Spec) (Result, error) {
	all, _, err := RunAll(ctx, []Spec{spec})
	return all, err
}

// RunAll is Run for several specs sent at once, each its own Fortio run at
// its own rate over its own connections, measured over one window: a
// mixed shape is its members, benign load with a share of attacks is two
// or more runs. The specs share Warmup, Duration and NoCatchUp; OnEdge is
// the first spec's (the others must have none). It returns the union of
// the runs (counts summed, latency over every call of every run, not an
// average of percentiles, and the load generator's CPU, which is not told
// apart by run), leaving out the runs marked Apart, and each run's own
// result (its window, without CPU).
func RunAll(ctx context.Context, specs []Spec) (all Result, each []Result, err error) {
	specs, err = normalizedAll(specs)
	if err != nil {
		return Result{}, nil, fmt.Errorf("loadgen: invalid spec: %w", err)
	}
	for _, s := range specs {
		if err := checkReachable(ctx, s); err != nil {
			return Result{}, nil, err
		}
	}
	quietFortio()
	runs := make([]*fortioRun, len(specs))
	for i, s := range specs {
		if runs[i], err = newFortioRun(s); err != nil {
			return Result{}, nil, err
		}
	}
	stop := abortOnCancel(ctx, runs)
	edges, runDone := make(chan windowEdges, 1), make(chan struct{})
	go driveWindow(ctx, specs[0], runs, runDone, edges)
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() { r.res, r.err = fhttp.RunHTTPTest(r.opts) })
	}
	wg.Wait()
	stop()
	close(runDone)
	each = make([]Result, len(runs))
	for i, r := range runs {
		if r.err != nil {
			return Result{}, nil, fmt.Errorf("loadgen: fortio run against %s: %w", r.spec.URL, r.err)
		}
		if each[i], err = resultFromFortio(r.spec, r.res); err != nil {
			return Result{}, nil, err
		}
	}
	if all, err = union(together(specs, each)); err != nil {
		return Result{}, nil, err
	}
	if ctx.Err() != nil {
		return all, each, fmt.Errorf("loadgen: run interrupted: %w", ctx.Err())
	}
	edge, ok := <-edges
	if !ok {
		return all, each, fmt.Errorf("loadgen: the run against %s ended before its window did", specs[0].URL)
	}
	if edge.cpuErr != nil {
		return all, each, edge.cpuErr
	}
	all.LoadgenCPUSeconds = edge.cpu[1] - edge.cpu[0]
	tallies := make([]tally, len(runs))
	for i, r := range runs {
		tallies[i] = r.rec.tally(r.spec.QPS, edge.times[0], edge.times[1], edge.times[2])
		each[i].useWindow(edge.window(r.spec.QPS, tallies[i]))
	}
	all.useWindow(edge.window(all.TargetQPS, together(specs, tallies)...))
	return all, each, nil
}

// fortioRun is one Fortio run of RunAll and what it recorded.
type fortioRun struct {
	spec Spec
	opts *fhttp.HTTPRunnerOptions
	rec  *recorder
	// stop is opts.Stop kept aside: Fortio sets opts.Stop to nil when
	// the run starts.
	stop *periodic.Aborter
	res  *fhttp.HTTPRunnerResults
	err  error
}

func newFortioRun(spec Spec) (*fortioRun, error) {
	opts, err := fortioOptions(spec)
	if err != nil {
		return nil, err
	}
	rec := newRecorder(spec.Connections)
	opts.AccessLogger = rec
	return &fortioRun{spec: spec, opts: opts, rec: rec, stop: opts.Stop}, nil
}

// normalizedAll normalizes every spec and checks that they can share one
// window.
func normalizedAll(specs []Spec) ([]Spec, error) {
	if len(specs) == 0 {
		return nil, errors.New("no spec to run")
	}
	out := make([]Spec, len(specs))
	var errs []error
	for i, s := range specs {
		n, err := s.normalized()
		if err != nil {
			errs = append(errs, fmt.Errorf("spec %d: %w", i, err))
		}
		out[i] = n
		first := specs[0]
		switch {
		case i > 0 && (s.Warmup != first.Warmup || s.Duration != first.Duration || s.NoCatchUp != first.NoCatchUp):
			errs = append(errs, fmt.Errorf("spec %d: Warmup, Duration and NoCatchUp must be the first spec's: the runs share one window", i))
		case i == 0 && s.Apart:
			errs = append(errs, errors.New("spec 0: the first run cannot be Apart: its OnEdge marks the union's window"))
		case i > 0 && s.OnEdge != nil:
			errs = append(errs, fmt.Errorf("spec %d: only the first spec's OnEdge is called", i))
		}
	}
	return out, errors.Join(errs...)
}

// together is the part of per-run values (results, tallies) whose runs
// are not Apart.
func together[T any](specs []Spec, perRun []T) []T {
	var out []T
	for i, s := range specs {
		if !s.Apart {
			out = append(out, perRun[i])
		}
	}
	return out
}

// union is the result of runs sent together, before their window is
// applied: counts and rates summed, Fortio's status counts merged, the raw
// results kept side by side. One run's union is itself.
func union(runs []Result) (Result, error) {
	if len(runs) == 1 {
		return runs[0], nil
	}
	u := Result{Codes: map[int]int64{}}
	raws := make([]json.RawMessage, len(runs))
	for i, r := range runs {
		u.TargetQPS, u.ActualQPS = u.TargetQPS+r.TargetQPS, u.ActualQPS+r.ActualQPS
		u.Duration = max(u.Duration, r.Duration)
		u.Scheduled, u.Completed, u.Non2xx = u.Scheduled+r.Scheduled, u.Completed+r.Completed, u.Non2xx+r.Non2xx
		u.SocketErrors, u.SocketsOpened = u.SocketErrors+r.SocketErrors, u.SocketsOpened+r.SocketsOpened
		for code, n := range r.Codes {
			u.Codes[code] += n
		}
		raws[i] = r.RawJSON
	}
	var err error
	if u.RawJSON, err = json.Marshal(raws); err != nil {
		return Result{}, fmt.Errorf("loadgen: encode fortio results: %w", err)
	}
	return u, nil
}

// windowEdges is what driveWindow marks: the window's start and end and
// the stop of the run, and the load generator's run delay at both edges.
type windowEdges struct {
	times    [3]time.Time
	runDelay [2]float64
	// cpu is this process's CPU seconds at the two edges.
	cpu    [2]float64
	cpuErr error
}

// window is the window of runs at a total rate qps, from their tallies.
func (e windowEdges) window(qps float64, tallies ...tally) Window {
	w := windowOf(e.times[0], e.times[1], qps, tallies...)
	w.RunDelaySeconds = e.runDelay[1] - e.runDelay[0]
	return w
}

// driveWindow waits for every run's first call, marks the window's edges
// (calling spec.OnEdge at each) and stops the runs after the tail. It
// sends the edges on done, or closes it when the runs ended first. The
// warm-up counts from the last run's first call, so every run is warm
// when the window opens.
func driveWindow(ctx context.Context, spec Spec, runs []*fortioRun, runDone <-chan struct{}, done chan<- windowEdges) {
	defer close(done)
	var first time.Time
	for _, r := range runs {
		select {
		case started := <-r.rec.started:
			if started.After(first) {
				first = started
			}
		case <-runDone:
			return
		}
	}
	var edges windowEdges
	for i, at := range []time.Time{first.Add(spec.Warmup), first.Add(spec.Warmup + spec.Duration)} {
		select {
		case <-time.After(time.Until(at)):
		case <-runDone:
			return
		}
		edges.times[i] = time.Now()
		// Unreadable schedstat (an old kernel) leaves the delay at 0.
		edges.runDelay[i], _ = procstat.RunDelaySeconds(os.Getpid())
		var err error
		if edges.cpu[i], err = processCPUSeconds(); err != nil {
			edges.cpuErr = err
		}
		if spec.OnEdge != nil {
			spec.OnEdge(Edge(i), edges.times[i])
		}
	}
	select {
	case <-time.After(tailAfterWindow):
	case <-runDone:
	case <-ctx.Done():
	}
	edges.times[2] = time.Now()
	for _, r := range runs {
		r.stop.Abort(false)
	}
	done <- edges
}

// useWindow makes the result's counts and latency the window's, so that
// every reader judges what happened inside it; Fortio's count of the whole
// run stays in RunCompleted.
func (r *Result) useWindow(w Window) {
	r.Window = &w
	r.RunCompleted = r.Completed
	r.Scheduled = int64(math.Round(w.Scheduled))
	r.Completed, r.Non2xx, r.SocketErrors = w.Completed, w.Non2xx, w.SocketErrors
	r.ActualQPS, r.Duration = w.AchievedQPS(), w.Duration()
	l := w.Corrected
	r.P50Ms, r.P90Ms, r.P99Ms, r.P999Ms, r.MaxMs = l.P50Ms, l.P90Ms, l.P99Ms, l.P999Ms, l.MaxMs
}

// quietFortio keeps Fortio's per-run chatter out of the output. Fortio's
// log level is process-wide; every Run sets the same value.
func quietFortio() { log.SetLogLevelQuiet(log.Warning) }

func fortioOptions(spec Spec) (*fhttp.HTTPRunnerOptions, error) {
	opts := &fhttp.HTTPRunnerOptions{
		RunnerOptions: periodic.RunnerOptions{
			QPS: spec.QPS,
			// Open-ended: a Fortio run of fixed duration stretches its
			// schedule so that the last call falls at the end, which
			// lowers the offered rate by 1/(calls per connection - 1).
			// driveWindow stops the run instead. (Fortio replaces 0 by
			// its default duration; a negative one means no end.)
			Duration:    -1,
			NumThreads:  spec.Connections,
			Percentiles: percentiles,
			Resolution:  resolutionSeconds,
			Uniform:     true, // requests evenly spaced 1/QPS apart
			// Catch-up unless the spec says otherwise: a connection that
			// fell behind sends its late calls at once, each timed from
			// its intended start (see Window). Skipping would hide the queue.
			NoCatchUp: spec.NoCatchUp,
			Jitter:    false,
			Out:       io.Discard,
			Stop:      periodic.NewAborter(),
		},
		HTTPOptions: fhttp.HTTPOptions{
			URL:            spec.URL,
			Payload:        spec.Body,
			ContentType:    spec.ContentType,
			MethodOverride: spec.Method,
			HTTPReqTimeOut: spec.RequestTimeout,
			// Fortio's first request on each connection, before the
			// timed run, is by default sent on all connections at once:
			// a burst of Connections requests that no statistic shows
			// but that sets the proxy's RSS peak (64 full-CRS requests
			// at once raise a WAF's heap by 20 MB). One at a time costs
			// the same proxy CPU and keeps the offered load constant.
			SequentialWarmup: true,
			// HTTP/2 needs Fortio's standard client: its own client
			// speaks HTTP/1.x only. Each connection (Fortio thread) has
			// its own client, so each still holds one connection with
			// one request in flight.
			H2:                spec.HTTP2,
			DisableFastClient: spec.HTTP2,
			TLSOptions:        fhttp.TLSOptions{CACert: spec.CAFile},
			Resolve:           spec.Resolve,
		},
		// The target was checked with a dial; a WAF answering 403 to the
		// warm-up is a result to record, not a reason to abort.
		AllowInitialErrors: true,
	}
	headers := []string{"Host: " + spec.Host}
	for k, v := range spec.Headers {
		headers = append(headers, k+": "+v)
	}
	for _, h := range headers {
		if err := opts.AddAndValidateExtraHeader(h); err != nil {
			return nil, fmt.Errorf("loadgen: header %q: %w", h, err)
		}
	}
	return opts, nil
}

// abortOnCancel stops the Fortio runs when ctx ends; the returned func
// releases the watcher once the runs are over.
func abortOnCancel(ctx context.Context, runs []*fortioRun) (release func()) {
	finished := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			for _, r := range runs {
				r.stop.Abort(false)
			}
		case <-finished:
		}
	}()
	return func() { close(finished) }
}

// resultFromFortio counts a Fortio run the sweep's way (Run then takes the
// window's counts). LoadgenCPUSeconds is left to the caller.
func resultFromFortio(spec Spec, res *fhttp.HTTPRunnerResults) (Result, error) {
	raw, err := archivedJSON(res)
	if err != nil {
		return Result{}, err
	}
	r := Result{
		TargetQPS:     spec.QPS,
		ActualQPS:     res.ActualQPS,
		Duration:      res.ActualDuration,
		Scheduled:     ScheduledCalls(spec.QPS, spec.Duration, spec.Connections),
		SocketsOpened: res.SocketCount,
		Codes:         maps.Clone(res.RetCodes),
		RawJSON:       raw,
	}
	if res.DurationHistogram == nil {
		return r, nil
	}
	r.Completed, r.MaxMs = res.DurationHistogram.Count, res.DurationHistogram.Max*1000
	for code, n := range r.Codes {
		switch {
		case code == fhttp.SocketError:
			r.SocketErrors += n
		case code < 200 || code > 299:
			r.Non2xx += n
		}
	}
	for _, p := range res.DurationHistogram.Percentiles {
		ms := p.Value * 1000
		switch p.Percentile {
		case 50:
			r.P50Ms = ms
		case 90:
			r.P90Ms = ms
		case 99:
			r.P99Ms = ms
		case 99.9:
			r.P999Ms = ms
		}
	}
	return r, nil
}

// RunCA stands in the archived result for the CA file a run trusted: the
// file is the run's own, in a temporary directory gone after the sweep, so
// its path says nothing about the result and names the machine.
const RunCA = "<run CA>"

// archivedJSON is Fortio's full result for archiving minus the request
// body, which Fortio stores base64 and which can be large, and with the CA
// file's path replaced by RunCA.
func archivedJSON(res *fhttp.HTTPRunnerResults) ([]byte, error) {
	full, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("loadgen: encode fortio result: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(full, &fields); err != nil {
		return nil, fmt.Errorf("loadgen: decode fortio result: %w", err)
	}
	delete(fields, "Payload")
	if res.CACert != "" {
		fields["CACert"], _ = json.Marshal(RunCA)
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("loadgen: encode fortio result: %w", err)
	}
	return out, nil
}

// processCPUSeconds is this process's user+system CPU time so far.
func processCPUSeconds() (float64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("loadgen: getrusage: %w", err)
	}
	seconds := func(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
	return seconds(ru.Utime) + seconds(ru.Stime), nil
}
