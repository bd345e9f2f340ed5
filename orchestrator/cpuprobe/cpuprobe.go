// Package cpuprobe measures how much fixed work one CPU does in a second,
// and how steadily.
//
// A sweep records a probe of the proxy's CPU each time it starts or
// resumes. A resume is refused on another processor model, but virtual
// machines sold under one model name differ, and a neighbour's load slows a
// shared host: a dataset measured in pieces says how fast the machine was
// under each piece, not only that its model matched. The work is a WAF's
// kind of work: matching attack patterns, case-insensitively, over a
// benign request they never match, so that every byte is scanned. Unlike
// an arithmetic loop, it depends on the caches a neighbour shares: on one
// virtual machine here with no CPU steal at all, it and a walk over a
// 64 KiB table ran up to twice as fast in one half-second as in another,
// while a multiply loop and SHA-256 held within 2%.
package cpuprobe

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// DefaultDuration is how long a sweep probes.
const DefaultDuration = 2 * time.Second

// slice is one sample of the rate: short enough that a probe has many,
// long enough (hundreds of units) that counting whole units costs under 1%.
const slice = 100 * time.Millisecond

// Probe is one measurement of one CPU.
type Probe struct {
	At  time.Time `json:"at"`
	CPU int       `json:"cpu"`
	// Rate is the median over the probe's 100 ms slices of units of the
	// work done per second; it compares only with probes of the same
	// wafsweep work on the same processor model.
	Rate float64 `json:"units_per_s"`
	// Spread is how far apart the fastest and the slowest slice were, as a
	// share of Rate: a steady machine's is a few percent.
	Spread float64 `json:"spread"`
}

// Slower is how much slower p ran than base: 0.15 for 15% fewer units per
// second, negative when p ran faster.
func (p Probe) Slower(base Probe) float64 { return 1 - p.Rate/base.Rate }

// attacks and request are the unit of work: the patterns never match the
// request (measurePinned checks), so the matcher scans all of it.
var (
	attacks = regexp.MustCompile(`(?i)union[\s/*]+select|<script\b|\bon(?:load|error|mouseover)\s*=|\.\./\.\./|/etc/(?:passwd|shadow)|\bexec\s*\(|\bsleep\s*\(\s*\d`)
	request = strings.Repeat("GET /catalog/search?q=running+shoes&size=42&color=blue&page=3 HTTP/1.1\r\n"+
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/128.0\r\nAccept: text/html\r\n", 8)
)

// Measure does the work on a thread pinned to cpu for d (at least one
// 100 ms slice) and returns its rate. The thread is never unpinned: it
// exits with the goroutine that locked it, so no other goroutine inherits
// its affinity.
func Measure(ctx context.Context, cpu int, d time.Duration) (Probe, error) {
	if cpu < 0 || d <= 0 {
		return Probe{}, fmt.Errorf("cpu probe: CPU %d for %v: want a CPU >= 0 and a positive duration", cpu, d)
	}
	type outcome struct {
		probe Probe
		err   error
	}
	done := make(chan outcome, 1)
	go func() {
		runtime.LockOSThread()
		p, err := measurePinned(ctx, cpu, max(1, int(d/slice)))
		done <- outcome{p, err}
	}()
	o := <-done
	return o.probe, o.err
}

func measurePinned(ctx context.Context, cpu, samples int) (Probe, error) {
	if err := procstat.PinThread([]int{cpu}); err != nil {
		return Probe{}, fmt.Errorf("cpu probe: %w", err)
	}
	start := time.Now()
	rates := make([]float64, samples)
	for i := range rates {
		if ctx.Err() != nil {
			return Probe{}, fmt.Errorf("cpu probe: %w", ctx.Err())
		}
		rate, err := sliceRate()
		if err != nil {
			return Probe{}, err
		}
		rates[i] = rate
	}
	rate, spread := medianAndSpread(rates)
	return Probe{At: start.UTC(), CPU: cpu, Rate: rate, Spread: spread}, nil
}

// sliceRate does units of the work for one slice.
func sliceRate() (float64, error) {
	start := time.Now()
	units := 0
	for ; time.Since(start) < slice; units++ {
		if attacks.MatchString(request) {
			return 0, errors.New("cpu probe: its patterns matched its request: the work is not a full scan")
		}
	}
	return float64(units) / time.Since(start).Seconds(), nil
}

// medianAndSpread: the median of rates, and the range of rates as a
// share of it.
func medianAndSpread(rates []float64) (median, spread float64) {
	sorted := slices.Sorted(slices.Values(rates))
	n := len(sorted)
	median = sorted[n/2]
	if n%2 == 0 {
		median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return median, (sorted[n-1] - sorted[0]) / median
}
