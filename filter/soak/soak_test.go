package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak drives Envoy for -soak.duration after a knee search")
	}
	duration := *soakDuration
	if duration < 10*time.Second {
		t.Fatalf("-soak.duration %v is too short for a warm-up and an RSS trend; use at least 10s", duration)
	}
	out := outputDir(t)
	// The knee search overloads its Envoy on purpose, which leaves the
	// module's Go heap inflated for minutes; the soak starts a fresh one so
	// that its RSS curve is the soak's alone.
	measured := startProxy(t)
	kneeRPS, kneeSteps := measureKnee(t, measured, benignMix)
	measured.stop(t)
	p := startProxy(t)
	rate := soakFraction * float64(kneeRPS)
	t.Logf("knee of the mix %d RPS; soaking at %.0f RPS for %v, output in %s", kneeRPS, rate, duration, shownPath(out))

	before, err := p.envoy.Stats(t.Context())
	if err != nil {
		t.Fatalf("Envoy stats: %v\n%s", err, p.logTail())
	}
	run := soak(t, p, rate, duration)

	s := summarize(run, duration)
	s.KneeRPS, s.KneeSteps, s.RateRPS = kneeRPS, kneeSteps, rate
	s.EnvoyExited = p.envoy.Exited()
	// Without Envoy at the end there are no final stats; the summary is
	// still written, with the exit as its first problem.
	if after, err := p.envoy.Stats(t.Context()); err != nil {
		t.Errorf("Envoy stats after the soak: %v", err)
	} else {
		s.Requests = after[requestsStat] - before[requestsStat]
		s.WAFBlocked = sumStats(after, "corazawaf.blocked.") - sumStats(before, "corazawaf.blocked.")
		s.WAFErrors = sumStats(after, "corazawaf.errors.")
	}

	if err := writeCurveCSV(filepath.Join(out, "rss.csv"), run.samples); err != nil {
		t.Error(err)
	}
	if err := writeSummaryJSON(filepath.Join(out, "summary.json"), s); err != nil {
		t.Error(err)
	}
	t.Log(s.line())
	t.Logf("RSS curve (elapsed: MB, goroutines): %s", curveDigest(run.samples, 12))
	for _, problem := range s.problems() {
		t.Error(problem)
	}
	if t.Failed() {
		t.Logf("Envoy (exit: %v) log ends:\n%s", p.envoy.ExitError(), p.logTail())
		keepEnvoyLog(t, p, filepath.Join(out, "envoy.log"))
	}
}

// soakRun is what the three concurrent loops of a soak collected.
type soakRun struct {
	liveHeaps  []float64 // live Go heap of each collection after warm-up, MB
	totals     mixTotals
	attacks    attackTally
	samples    []sample
	sampleErr  error
	sampleStep time.Duration
}

// soak drives the benign mix at rate for d while attacks trickle in and
// the sampler watches Envoy; the attacks and the sampler stop with the mix.
func soak(t *testing.T, p *proxy, rate float64, d time.Duration) soakRun {
	t.Helper()
	run := soakRun{sampleStep: sampleInterval(d)}
	checks := attacks(t)
	start := time.Now()
	var afterWarmup atomic.Int64 // Envoy log offset at the end of warm-up
	warm := time.AfterFunc(time.Duration(float64(d)*warmupFraction), func() { afterWarmup.Store(logSize(p)) })
	defer warm.Stop()
	watch, stopWatching := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { run.attacks = driveAttacks(watch, p.baseURL, checks) })
	wg.Go(func() { run.samples, run.sampleErr = sampleUntil(watch, p, start, run.sampleStep) })
	results, err := runMix(t.Context(), mixSpecs(t, p.baseURL, benignMix, rate, d))
	stopWatching()
	wg.Wait()
	run.totals = totalsOf(results)
	if err != nil {
		t.Errorf("benign load: %v", err)
	}
	if run.liveHeaps, err = liveHeapsSince(p, afterWarmup.Load()); err != nil {
		t.Error(err)
	}
	return run
}

// summarize turns a run into its summary, bounds computed.
func summarize(run soakRun, d time.Duration) summary {
	s := summary{
		Duration:           d.String(),
		BenignScheduled:    run.totals.Scheduled,
		BenignCompleted:    run.totals.Completed,
		BenignNon2xx:       run.totals.Non2xx,
		BenignSocketErrors: run.totals.SocketErrors,
		Attacks:            run.attacks.Sent,
		AttacksBlocked:     run.attacks.Blocked,
		AttackMisses:       run.attacks.Misses,
		Restarts:           countRestarts(run.samples),
		Samples:            len(run.samples),
		RSSBoundPct:        rssBound(d) * 100,
		RSSMaxMB:           maxRSS(run.samples),
	}
	if run.sampleErr != nil {
		s.SampleError = run.sampleErr.Error()
	}
	if len(run.samples) > 0 {
		s.RSSStartMB, s.RSSEndMB = run.samples[0].RSSMB, run.samples[len(run.samples)-1].RSSMB
	}
	if afterWarmup, end, ok := rssGrowth(run.samples, d); ok {
		s.RSSLowAfterWarmupMB, s.RSSLowEndMB = afterWarmup, end
		s.RSSGrowthPct = (end/afterWarmup - 1) * 100
	} else if s.SampleError == "" {
		s.SampleError = fmt.Sprintf("%d samples every %v do not cover the warm-up and end windows", len(run.samples), run.sampleStep)
	}
	s.GoroutinesMin, s.GoroutinesMax = goroutineRange(run.samples)
	s.Collections = len(run.liveHeaps)
	if len(run.liveHeaps) > 0 {
		s.LiveHeapMinMB, s.LiveHeapMaxMB = slices.Min(run.liveHeaps), slices.Max(run.liveHeaps)
	}
	return s
}

// keepEnvoyLog copies Envoy's log next to the results of a failed soak:
// its own directory is removed with the test.
func keepEnvoyLog(t *testing.T, p *proxy, path string) {
	t.Helper()
	data, err := os.ReadFile(p.envoy.LogPath())
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		t.Errorf("keeping Envoy's log: %v", err)
	}
}

// sumStats adds up the stats under prefix, e.g. every labelled
// corazawaf.blocked.phase.*.rule_id.* counter.
func sumStats(stats map[string]uint64, prefix string) uint64 {
	var sum uint64
	for name, v := range stats {
		if strings.HasPrefix(name, prefix) {
			sum += v
		}
	}
	return sum
}

// curveDigest renders about n evenly spaced samples for the test log.
func curveDigest(samples []sample, n int) string {
	if len(samples) == 0 {
		return "(no samples)"
	}
	step := max(1, len(samples)/n)
	var parts []string
	for i := 0; i < len(samples); i += step {
		s := samples[i]
		parts = append(parts, fmt.Sprintf("%.0fs: %.1f, %d", s.Elapsed.Seconds(), s.RSSMB, s.Goroutines))
	}
	last := samples[len(samples)-1]
	if (len(samples)-1)%step != 0 {
		parts = append(parts, fmt.Sprintf("%.0fs: %.1f, %d", last.Elapsed.Seconds(), last.RSSMB, last.Goroutines))
	}
	return strings.Join(parts, " | ")
}
