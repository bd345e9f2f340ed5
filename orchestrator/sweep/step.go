package sweep

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/target"
)

// rssSampleEvery is how often the proxy's RSS is read during a step for
// the step's peak (VmHWM only gives the lifetime peak).
const rssSampleEvery = 250 * time.Millisecond

// maxBackendCPU is the share of its CPU budget above which the backend,
// not the proxy, may be the bottleneck.
const maxBackendCPU = 0.9

// step measures one rate: warm-up, measured window, cool-down. A step whose
// pre-check failed is recorded as invalid without sending load.
func (c *configRun) step(ctx context.Context, rate int, kind knee.Kind) (dataset.StepRow, error) {
	row := c.newRow(rate, kind)
	if c.precheckOK != nil {
		return c.invalid(row, c.precheckOK.Error()), nil
	}
	spec := c.spec(rate, c.opts.Plan.Warmup)
	if _, err := c.deployed.RunLoad(ctx, spec); err != nil && ctx.Err() != nil {
		return row, ctx.Err()
	}
	row.StartedAt = time.Now().UTC()
	before, err := c.deployed.Usage()
	if err != nil {
		return row, err
	}
	peak := startRSSSampler(c.deployed)
	res, err := c.deployed.RunLoad(ctx, c.spec(rate, c.opts.Plan.Measure))
	stepPeak := peak()
	if ctx.Err() != nil {
		return row, ctx.Err()
	}
	if err != nil {
		return c.invalid(row, "load generator: "+err.Error()), nil
	}
	after, err := c.deployed.Usage()
	if err != nil && !c.deployed.Restarted() {
		return row, err
	}
	c.fill(&row, res, before, after, stepPeak)
	if err := c.archive(&row, res.RawJSON); err != nil {
		return row, err
	}
	select {
	case <-ctx.Done():
		return row, ctx.Err()
	case <-time.After(c.opts.Plan.Cooldown):
	}
	return row, nil
}

func (c *configRun) spec(rate int, d time.Duration) loadgen.Spec {
	return loadgen.Spec{
		URL: c.deployed.URL() + "/api/orders", Host: c.opts.Host, Method: c.shape.Method,
		ContentType: c.shape.ContentType, Body: c.shape.Body,
		QPS: float64(rate), Connections: c.opts.Plan.Connections, Duration: d,
	}
}

func (c *configRun) newRow(rate int, kind knee.Kind) dataset.StepRow {
	return dataset.StepRow{
		SweepID: c.opts.SweepID, Round: c.round, ConfigID: c.cfg.ID(),
		Flavor: c.cfg.Flavor, Tier: c.cfg.Tier, Shape: c.cfg.Shape,
		ShapeBytes: len(c.shape.Body), ShapeFields: c.shape.Fields,
		Seq: len(c.journal.Steps(c.round, c.cfg.ID())), Kind: string(kind),
		TargetRPS: rate, Connections: c.opts.Plan.Connections,
		WarmupS: c.opts.Plan.Warmup.Seconds(), MeasureS: c.opts.Plan.Measure.Seconds(),
		StartedAt: time.Now().UTC(),
		Scheduled: knee.Scheduled(rate, c.opts.Plan.Measure, c.opts.Plan.Connections),
		P50Ms:     math.NaN(), P90Ms: math.NaN(), P99Ms: math.NaN(), P999Ms: math.NaN(), MaxMs: math.NaN(),
		ProxyCPUS: math.NaN(), CoresPer1k: math.NaN(), ProxyRSSPeakMB: math.NaN(), ProxyRSSLifetimePeakMB: math.NaN(),
		LoadgenCPUS: math.NaN(), LoadgenCPUFraction: math.NaN(), AchievedRPS: math.NaN(),
		ProxyIdleCPUSPerS: c.idleCPUPS,
	}
}

func (c *configRun) invalid(row dataset.StepRow, reason string) dataset.StepRow {
	row.Verdict = dataset.VerdictInvalid
	row.Reasons = append(row.Reasons, reason)
	return row
}

// fill copies the load result and resource deltas into the row and decides
// the verdict (see package knee for pass/fail, and the notes for validity).
func (c *configRun) fill(row *dataset.StepRow, res loadgen.Result, before, after target.Usage, stepPeakRSS uint64) {
	row.Scheduled, row.Completed = res.Scheduled, res.Completed
	row.Non2xx, row.SocketErrors, row.SocketsOpened = res.Non2xx, res.SocketErrors, res.SocketsOpened
	row.AchievedRPS = res.ActualQPS
	row.P50Ms, row.P90Ms, row.P99Ms, row.P999Ms, row.MaxMs = res.P50Ms, res.P90Ms, res.P99Ms, res.P999Ms, res.MaxMs
	measure := c.opts.Plan.Measure.Seconds()
	row.LoadgenCPUS = res.LoadgenCPUSeconds
	row.LoadgenCPUFraction = res.LoadgenCPUSeconds / (measure * float64(c.deployed.LoadgenCores()))
	row.ProxyCPUS = after.ProxyCPUSeconds - before.ProxyCPUSeconds
	if ok := res.Completed - res.Non2xx - res.SocketErrors; ok > 0 && after.ProxyPeakRSSBytes > 0 {
		row.CoresPer1k = 1000 * (row.ProxyCPUS - c.idleCPUPS*measure) / float64(ok)
	}
	if after.ProxyPeakRSSBytes > 0 {
		row.ProxyRSSPeakMB = mb(stepPeakRSS)
		row.ProxyRSSLifetimePeakMB = mb(after.ProxyPeakRSSBytes)
	}
	row.ProxyRestarted = c.deployed.Restarted()
	row.Reasons = invalidReasons(*row, res, before, after, c.opts.Plan.MaxLoadgenCPU)
	if len(row.Reasons) > 0 {
		row.Verdict = dataset.VerdictInvalid
	}
	step := row.KneeStep()
	row.Completion, row.ErrorRatio = step.Completion(), step.ErrorRatio()
	row.Verdict = dataset.VerdictOf(step)
	if !step.Invalid && !step.Passed() {
		row.Reasons = failReasons(step)
	}
}

// failReasons says which of the pass conditions a step missed.
func failReasons(s knee.Step) []string {
	var reasons []string
	if s.Completion() < knee.MinCompletion {
		reasons = append(reasons, fmt.Sprintf("completion %.3f < %.2f", s.Completion(), knee.MinCompletion))
	}
	if s.ErrorRatio() > knee.MaxErrorRatio {
		reasons = append(reasons, fmt.Sprintf("error ratio %.4f > %.3f", s.ErrorRatio(), knee.MaxErrorRatio))
	}
	return reasons
}

// invalidReasons lists why a step says nothing about the proxy: the load
// generator ran out of CPU, the proxy restarted, connections were re-opened
// without errors explaining it, or the backend saturated.
func invalidReasons(row dataset.StepRow, res loadgen.Result, before, after target.Usage, maxLoadgen float64) []string {
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
	if before.BackendCPUSeconds >= 0 && after.BackendCPUSeconds >= 0 {
		if busy := (after.BackendCPUSeconds - before.BackendCPUSeconds) / row.MeasureS; busy > maxBackendCPU {
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
	rel := fmt.Sprintf("raw/r%d/%s/%s/%s/%03d-%d.json.gz", c.round, c.cfg.Flavor, c.cfg.Tier, c.cfg.Shape, row.Seq, row.TargetRPS)
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
