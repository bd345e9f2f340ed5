package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/target"
)

// rssSampleEvery is how often the proxy's RSS is read during a step for
// the step's peak (VmHWM only gives the lifetime peak).
const rssSampleEvery = 250 * time.Millisecond

// maxBackendCPU is the share of its CPU budget above which the backend,
// not the proxy, may be the bottleneck.
const maxBackendCPU = 0.9

// Tolerances of the window's cross-checks: CPU is read in clock ticks, and
// the two request counts straddle the edges (beside the measured skew of
// the proxy's readings, see countsAgree).
const (
	cpuAllowanceSlack   = 1.01 // fraction of the proxy's cores
	counterSlackSeconds = 0.01 // of traffic at the target rate
	counterSlackShare   = 0.01 // of the window's completions
)

// step measures one rate: one run of warm-up, measured window and a short
// tail, with the proxy's CPU and request counters sampled at the window's
// edges, then a cool-down. A step whose pre-check failed is recorded as
// invalid without sending load. A step of several runs (a mixed shape's
// members, attacks beside the load) also returns what each was sent and
// got.
func (c *configRun) step(ctx context.Context, rate int, kind knee.Kind, sloMs float64) (dataset.StepRow, []dataset.MemberRow, error) {
	row := c.newRow(rate, kind, sloMs)
	if c.precheckOK != nil {
		return c.invalid(row, c.precheckOK.Error()), nil, nil
	}
	edges := &windowEdges{deployed: c.deployed}
	defer edges.stop()
	runs := c.runs(rate, row.Connections)
	specs := specsOf(runs)
	specs[0].OnEdge = edges.sample
	row.Connections = benignConnections(runs)
	row.StartedAt = time.Now().UTC()
	peak := startRSSSampler(c.deployed)
	res, each, err := c.deployed.RunLoad(ctx, specs)
	stepPeak := peak()
	if ctx.Err() != nil {
		return row, nil, ctx.Err()
	}
	if err != nil {
		return c.invalid(row, "load generator: "+err.Error()), nil, nil
	}
	if res.Window == nil {
		// Every target's load generator is package loadgen's; totals over
		// a whole run would be judged as if they were the window's.
		return c.invalid(row, "load generator: no measured window in its result"), nil, nil
	}
	window, err := edges.result()
	if err != nil && !c.deployed.Restarted() {
		return row, nil, err
	}
	members := memberRows(row, runs, each)
	c.fill(&row, res, window, stepPeak, members)
	if err := c.archive(&row, res.RawJSON); err != nil {
		return row, nil, err
	}
	select {
	case <-ctx.Done():
		return row, members, ctx.Err()
	case <-time.After(c.opts.Plan.Cooldown):
	}
	return row, members, nil
}

// transportSpec is how every request of the configuration reaches it, the
// pre-check's and the load's: base URL, Host, protocol and the CA.
func (c *configRun) transportSpec() loadgen.Spec {
	s := loadgen.Spec{URL: c.deployed.URL(), Host: c.opts.Host, HTTP2: c.opts.Plan.Transport().HTTP2()}
	if c.certs != nil {
		s.CAFile = c.certs.CA
	}
	return s
}

// edgeSample is the proxy as it was at one edge of the window.
type edgeSample struct {
	usage     target.Usage
	completed int64 // the proxy's own count; -1 when it has none
	// countedAfter is when, after the edge, the count was asked for and
	// when it was answered: it was read somewhere in between.
	countedAfter [2]time.Duration
	// stealPeak, at the window's end, is the most steal of any second of
	// the window (stealWatch); NaN where it was not read.
	stealPeak float64
}

// windowEdges samples the deployment at the window's two edges, from the
// load generator's goroutine.
type windowEdges struct {
	deployed target.Deployed
	mu       sync.Mutex
	samples  []edgeSample
	err      error
	steal    *stealWatch // from the first edge to the second
}

// sample reads the proxy's counter first: a request count moves with
// every millisecond of delay, CPU seconds only in clock ticks.
func (w *windowEdges) sample(_ loadgen.Edge, at time.Time) {
	s := edgeSample{completed: -1}
	var countErr error
	if pc, ok := w.deployed.(target.ProxyCounter); ok {
		asked := time.Now()
		s.completed, countErr = pc.ProxyCompleted()
		s.countedAfter = [2]time.Duration{asked.Sub(at), time.Since(at)}
	}
	u, err := w.deployed.Usage()
	s.usage = u
	w.mu.Lock()
	defer w.mu.Unlock()
	switch len(w.samples) {
	case 0:
		w.steal = watchSteal(w.deployed, stealEvery)
	case 1:
		s.stealPeak = w.steal.finish()
		w.steal = nil
	}
	w.samples = append(w.samples, s)
	w.err = errors.Join(w.err, countErr, err)
}

// stop ends a steal watch the window's end never ended (the run failed).
func (w *windowEdges) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.steal.finish()
	w.steal = nil
}

// result returns the two edges, or why they are missing.
func (w *windowEdges) result() ([2]edgeSample, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return [2]edgeSample{}, fmt.Errorf("sampling the proxy at the window's edges: %w", w.err)
	}
	if len(w.samples) != 2 {
		return [2]edgeSample{}, fmt.Errorf("the load run marked %d window edges, want 2", len(w.samples))
	}
	return [2]edgeSample{w.samples[0], w.samples[1]}, nil
}

// newRow starts the row of a step at rate for kind of search; sloMs is the
// p99 objective of an SLO search's step (0: a capacity step), which its
// verdict and validity are judged on.
func (c *configRun) newRow(rate int, kind knee.Kind, sloMs float64) dataset.StepRow {
	return dataset.StepRow{
		SweepID: c.opts.SweepID, Round: c.round, ConfigID: c.cfg.ID(),
		Flavor: c.cfg.Flavor, Tier: c.cfg.Tier, Shape: c.cfg.Shape, Transport: c.opts.Plan.Transport(),
		ShapeBytes: c.shape.Bytes, ShapeFields: c.shape.Fields,
		Seq: len(c.journal.Steps(c.round, c.cfg.ID())), Kind: string(kind), SLOMs: sloMs,
		TargetRPS: rate, Connections: c.opts.Plan.ConnectionsFor(rate),
		WarmupS: c.opts.Plan.Warmup.Seconds(), MeasureS: c.opts.Plan.Measure.Seconds(),
		StartedAt: time.Now().UTC(),
		WindowS:   math.NaN(),
		Scheduled: int64(math.Round(float64(rate) * c.opts.Plan.Measure.Seconds())),
		P50Ms:     math.NaN(), P90Ms: math.NaN(), P99Ms: math.NaN(), P999Ms: math.NaN(), MaxMs: math.NaN(),
		P50RawMs: math.NaN(), P99RawMs: math.NaN(), LoadgenLatenessP99Ms: math.NaN(), ProxyCompleted: -1,
		LoadgenRunDelayS: math.NaN(), BackendCPUS: math.NaN(), ProxyThrottledS: math.NaN(), StealS: math.NaN(), StealPeakShare: math.NaN(),
		ProxyCPUS: math.NaN(), CoresPer1k: math.NaN(), ProxyRSSPeakMB: math.NaN(), ProxyRSSLifetimePeakMB: math.NaN(),
		LoadgenCPUS: math.NaN(), LoadgenCPUFraction: math.NaN(), AchievedRPS: math.NaN(),
		AuditBytesPerReq: math.NaN(), ProxyDiskWriteBytesPerS: math.NaN(), ProxyCountSkewMs: math.NaN(),
		ProxyIdleCPUSPerS: c.idleCPUPS,
		Intended:          -1, P50FirstFifthMs: math.NaN(), P50LastFifthMs: math.NaN(),
	}
}

func (c *configRun) invalid(row dataset.StepRow, reason string) dataset.StepRow {
	row.Verdict = dataset.VerdictInvalid
	row.Reasons = append(row.Reasons, reason)
	return row
}

// fill copies the load result and the window's resource deltas into the
// row and decides the verdict (see package knee for pass/fail, and the
// notes for validity).
func (c *configRun) fill(row *dataset.StepRow, res loadgen.Result, edges [2]edgeSample, stepPeakRSS uint64, members []dataset.MemberRow) {
	fillCounts(row, res, edges)
	fillAttacks(row, members)
	window := row.WindowS
	before, after := edges[0].usage, edges[1].usage
	row.LoadgenCPUS = res.LoadgenCPUSeconds
	if run := res.Duration.Seconds(); run > 0 {
		row.LoadgenCPUFraction = res.LoadgenCPUSeconds / (run * float64(c.deployed.LoadgenCores()))
	}
	row.ProxyCPUS = after.ProxyCPUSeconds - before.ProxyCPUSeconds
	if before.BackendCPUSeconds >= 0 && after.BackendCPUSeconds >= 0 {
		row.BackendCPUS = after.BackendCPUSeconds - before.BackendCPUSeconds
	}
	if before.StealSeconds >= 0 && after.StealSeconds >= 0 {
		row.StealS = after.StealSeconds - before.StealSeconds
	}
	row.StealPeakShare = edges[1].stealPeak
	if before.ProxyThrottledSeconds >= 0 && after.ProxyThrottledSeconds >= 0 {
		row.ProxyThrottledS = after.ProxyThrottledSeconds - before.ProxyThrottledSeconds
	}
	fillWrites(row, before, after)
	ok := row.Served()
	switch {
	case ok <= 0:
	case c.cfg.Flavor == plan.FlavorDirect && !math.IsNaN(row.BackendCPUS):
		// No proxy: what the load generator meets is the backend.
		row.CoresPer1k = 1000 * row.BackendCPUS / float64(ok)
	case after.ProxyPeakRSSBytes > 0:
		row.CoresPer1k = 1000 * (row.ProxyCPUS - c.idleCPUPS*window) / float64(ok)
		if !(row.CoresPer1k > 0) {
			// Requests cost something: a few at a low rate can cost less
			// than the error of the idle estimate, which is no figure.
			row.CoresPer1k = math.NaN()
		}
	}
	if after.ProxyPeakRSSBytes > 0 {
		row.ProxyRSSPeakMB = mb(stepPeakRSS)
		// The high-water mark is read at the window's end, the step's
		// peak sampled until the tail's: memory taken in between is in the
		// second only, and the lifetime peak cannot be below it.
		row.ProxyRSSLifetimePeakMB = mb(max(after.ProxyPeakRSSBytes, stepPeakRSS))
	}
	row.ProxyRestarted = c.deployed.Restarted()
	row.Reasons = invalidReasons(*row, res, c.opts.Plan.MaxLoadgenCPU)
	row.Reasons = append(row.Reasons, windowReasons(*row, c.deployed.ProxyCores(), c.opts.Plan)...)
	if len(row.Reasons) > 0 {
		row.Verdict = dataset.VerdictInvalid
	}
	*row = dataset.AsRecorded(*row) // judged on the figures steps.csv keeps
	step := row.KneeStep()
	row.Completion, row.ErrorRatio = step.Completion(), step.ErrorRatio()
	row.Verdict = dataset.VerdictOf(step)
	if !step.Invalid && !step.Passed() {
		row.Reasons = failReasons(*row)
	}
}

// fillWrites records what the proxy wrote in the window: its audit log's
// growth per request completed there, and its writes to storage per second.
func fillWrites(row *dataset.StepRow, before, after target.Usage) {
	if before.AuditLogBytes >= 0 && after.AuditLogBytes >= 0 && row.Completed > 0 {
		row.AuditBytesPerReq = float64(after.AuditLogBytes-before.AuditLogBytes) / float64(row.Completed)
	}
	if before.ProxyWrittenBytes >= 0 && after.ProxyWrittenBytes >= 0 && row.WindowS > 0 {
		row.ProxyDiskWriteBytesPerS = float64(after.ProxyWrittenBytes-before.ProxyWrittenBytes) / row.WindowS
	}
}

// fillCounts takes the step's counts and latency from the load
// generator's window (res.Window, never nil here), the proxy's own count
// from the edges.
func fillCounts(row *dataset.StepRow, res loadgen.Result, edges [2]edgeSample) {
	row.SocketsOpened = res.SocketsOpened
	if edges[0].completed >= 0 && edges[1].completed >= 0 {
		row.ProxyCompleted = edges[1].completed - edges[0].completed
		row.ProxyCountSkewMs = countSkew(edges).Seconds() * 1000
	}
	w := res.Window
	row.WindowS = w.Seconds()
	row.Scheduled = int64(math.Round(w.Scheduled))
	row.Completed, row.Non2xx, row.SocketErrors = w.Completed, w.Non2xx, w.SocketErrors
	row.AchievedRPS = w.AchievedQPS()
	l := w.Corrected
	row.P50Ms, row.P90Ms, row.P99Ms, row.P999Ms, row.MaxMs = l.P50Ms, l.P90Ms, l.P99Ms, l.P999Ms, l.MaxMs
	row.P50RawMs, row.P99RawMs = w.Raw.P50Ms, w.Raw.P99Ms
	row.LoadgenLatenessP99Ms, row.Unsent = w.Lateness.P99Ms, w.Unsent
	row.Intended = w.Intended
	row.P50FirstFifthMs, row.P50LastFifthMs = w.FirstFifth.P50Ms, w.LastFifth.P50Ms
	row.LoadgenRunDelayS = w.RunDelaySeconds
}

// countSkew bounds how far the span between the two readings of the
// proxy's counter may be longer or shorter than the window: longer when
// the end's count was read as late as it could have been and the start's
// as early, shorter the other way round.
func countSkew(edges [2]edgeSample) time.Duration {
	longer := edges[1].countedAfter[1] - edges[0].countedAfter[0]
	shorter := edges[0].countedAfter[1] - edges[1].countedAfter[0]
	return max(longer, shorter, 0)
}

// windowReasons lists why the window's own figures cannot be right: the
// proxy used more CPU than it has, or its request count disagrees with the
// load generator's.
func windowReasons(row dataset.StepRow, proxyCores float64, p plan.Plan) []string {
	var reasons []string
	if proxyCores > 0 && row.WindowS > 0 {
		if used := row.ProxyCPUS / row.WindowS; used > proxyCores*cpuAllowanceSlack {
			reasons = append(reasons, fmt.Sprintf("proxy used %.3f cores over the window, more than the %g it may use", used, proxyCores))
		}
	}
	if steal := row.StealS / row.WindowS; steal > p.MaxCPUSteal {
		reasons = append(reasons, fmt.Sprintf("the hypervisor took %.1f%% of a CPU from the measured CPUs (limit %.0f%%)", 100*steal, 100*p.MaxCPUSteal))
	} else if limit := stealPeakLimit(p); row.StealPeakShare > limit {
		reasons = append(reasons, fmt.Sprintf("the hypervisor took %.0f%% of a CPU from the measured CPUs in one second of the window (limit %.0f%%)", 100*row.StealPeakShare, 100*limit))
	}
	reasons = append(reasons, latenessReasons(row, p)...)
	if row.ProxyCompleted >= 0 && !countsAgree(row) && !overloaded(row) {
		reasons = append(reasons, fmt.Sprintf("proxy counted %d requests in the window, the load generator %d (%d of them without a response)",
			row.ProxyCompleted, row.Completed+row.AttackCalls, row.SocketErrors))
	}
	return reasons
}

// stealPeakLimit is the most steal one second of the window may have:
// five times the window's limit (10% of a CPU at the default 2%), at
// least 10%; 0.1 s taken at once stalls that second's requests by as much,
// more than a p99 of a few milliseconds can absorb. A plan that lifts the
// window's limit (tests on shared machines) lifts this one with it.
func stealPeakLimit(p plan.Plan) float64 { return max(0.10, 5*p.MaxCPUSteal) }

// countsAgree: the proxy's count of requests completed in the window
// matches the load generator's, within a slack for requests that straddle
// the window's edges and for those of the time by which the counter's
// readings were apart more or less than the window (ProxyCountSkewMs, at
// the window's rate; a loaded machine delays one reading more than the
// other). The proxy counts the attacks too. A call that got no response
// (the client's timeout, a reset) ended at the load generator but may
// never have ended at the proxy: an overloaded proxy still holds most of
// them when the client gives up, so those may be missing from the proxy's
// count, never extra.
func countsAgree(row dataset.StepRow) bool {
	sent := row.Completed + row.AttackCalls
	slack := counterSlackShare*float64(sent) + counterSlackSeconds*float64(row.TargetRPS) + 2
	if skewS := row.ProxyCountSkewMs / 1000; skewS > 0 && row.WindowS > 0 { // NaN: a dataset from before it was measured
		slack += skewS * float64(sent) / row.WindowS
	}
	lowest := float64(sent-row.SocketErrors) - slack
	highest := float64(sent) + slack
	return float64(row.ProxyCompleted) >= lowest && float64(row.ProxyCompleted) <= highest
}

// overloaded: the step fails as overloaded whoever counts, so that a
// disagreement of the two counts cannot change its verdict. At ten times
// its capacity the proxy and the load generator each saw about a tenth of
// the calls scheduled (509 and 489 in one step of the first default sweep:
// the warm-up's queue draining into the window reaches the two counters
// unevenly); a step whose queue grew through its window fails whatever
// either counted. Such a step is a failure, never an invalid measurement,
// which would be retried and end its configuration's search without a
// knee.
func overloaded(row dataset.StepRow) bool {
	st := row.KneeStep()
	if !st.Sustained() {
		return true
	}
	byProxy := float64(row.ProxyCompleted-row.AttackCalls) / float64(max(row.Scheduled, 1))
	return st.Completion() < knee.MinCompletion && byProxy < knee.MinCompletion
}

// latenessReasons: the load generator's own delay in sending (its p99 on
// free connections; timer wake-ups take about 1 ms on the VMs seen) is in
// every corrected latency it reports, and is published with each step. It
// invalidates a step only where it could change the step's verdict: an SLO
// step's p99 is judged against its objective, so there the lateness must be
// a small part of the objective; a capacity step counts responses in the
// window, which a late send still lands in, unless the load generator is
// not keeping its schedule at all. (Its CPUs' run delay, in
// loadgen_run_delay_s, says why when it is late.)
func latenessReasons(row dataset.StepRow, p plan.Plan) []string {
	late := row.LoadgenLatenessP99Ms
	maxDelayMs := float64(p.MaxLoadgenDelay) / float64(time.Millisecond)
	switch {
	case late > maxDelayMs:
		return []string{fmt.Sprintf("load generator's own lateness p99 %.2f ms is over %g ms: it is not keeping its schedule", late, maxDelayMs)}
	case row.SLOMs > 0 && late > p.MaxLoadgenLateness*row.SLOMs:
		return []string{fmt.Sprintf("load generator's own lateness p99 %.2f ms is over %.0f%% of the %g ms objective",
			late, 100*p.MaxLoadgenLateness, row.SLOMs)}
	}
	return nil
}

// failReasons says which of the pass conditions a step missed.
func failReasons(row dataset.StepRow) []string {
	s := row.KneeStep()
	var reasons []string
	if row.AttackMisses > 0 {
		reasons = append(reasons, fmt.Sprintf("%d attack calls did not get their status (members.csv says which)", row.AttackMisses))
	}
	if row.BenignBlocked > 0 {
		reasons = append(reasons, fmt.Sprintf("%d benign calls were blocked", row.BenignBlocked))
	}
	if s.Completion() < knee.MinCompletion {
		reasons = append(reasons, fmt.Sprintf("completion %.3f < %.2f", s.Completion(), knee.MinCompletion))
	}
	grew, backlog := s.Unsustained()
	if grew {
		reasons = append(reasons, fmt.Sprintf("not sustained: p50 rose from %.3g ms in the window's first fifth to %.3g ms in its last", s.FirstFifthP50Ms, s.LastFifthP50Ms))
	}
	if backlog {
		reasons = append(reasons, fmt.Sprintf("not sustained: the window ended with a backlog, p50 %.3g ms in its last fifth for %.3g ms raw", s.LastFifthP50Ms, s.RawP50Ms))
	}
	if s.ErrorRatio() > knee.MaxErrorRatio {
		reasons = append(reasons, fmt.Sprintf("error ratio %.4f > %.3f", s.ErrorRatio(), knee.MaxErrorRatio))
	}
	if s.MaxP99Ms > 0 && !(s.P99Ms <= s.MaxP99Ms) {
		reasons = append(reasons, fmt.Sprintf("p99 %.2f ms is over the %g ms objective", s.P99Ms, s.MaxP99Ms))
	}
	return reasons
}

// invalidReasons lists why a step says nothing about the proxy: the load
// generator ran out of CPU, the proxy restarted, connections were re-opened
// without errors explaining it, or the backend saturated.
func invalidReasons(row dataset.StepRow, res loadgen.Result, maxLoadgen float64) []string {
	var reasons []string
	if row.LoadgenCPUFraction > maxLoadgen {
		reasons = append(reasons, fmt.Sprintf("load generator used %.0f%% of its CPU budget (limit %.0f%%)", 100*row.LoadgenCPUFraction, 100*maxLoadgen))
	}
	if row.ProxyRestarted {
		reasons = append(reasons, "proxy exited or restarted during the step")
	}
	if res.SocketsOpened > int64(row.Connections) && res.Non2xx == 0 && res.SocketErrors == 0 {
		reasons = append(reasons, fmt.Sprintf("%d reconnects without errors", res.SocketsOpened-int64(row.Connections)))
	}
	// The direct flavor measures the backend itself: its saturation is
	// that flavor's knee, not a flaw of the measurement.
	if row.Flavor != plan.FlavorDirect && !math.IsNaN(row.BackendCPUS) && row.WindowS > 0 {
		if busy := row.BackendCPUS / row.WindowS; busy > maxBackendCPU {
			reasons = append(reasons, fmt.Sprintf("backend saturated (%.0f%% of a core)", 100*busy))
		}
	}
	return reasons
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// archive writes the step's Fortio JSON, compressed, next to the datasets.
func (c *configRun) archive(row *dataset.StepRow, raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	rel := fmt.Sprintf("raw/r%d/%s/%s/%s/%03d-%d.json.gz", c.round, c.cfg.Flavor, c.cfg.Tier, plan.PathName(c.cfg.Shape), row.Seq, row.TargetRPS)
	if err := dataset.WriteRawGzip(c.opts.OutDir, rel, raw); err != nil {
		return err
	}
	row.RawFile = rel
	return nil
}

// startRSSSampler reads the proxy's RSS until the returned function is
// called, which reports the peak seen.
func startRSSSampler(d target.Deployed) func() uint64 {
	var (
		mu   sync.Mutex
		peak uint64
		stop = make(chan struct{})
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		t := time.NewTicker(rssSampleEvery)
		defer t.Stop()
		for {
			if u, err := d.Usage(); err == nil {
				mu.Lock()
				peak = max(peak, u.ProxyRSSBytes)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}
