package soak

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// Stat names the sampler reads.
var (
	requestsStat   = "http." + envoyconfig.HTTPStatPrefix + ".downstream_rq_total"
	goroutinesStat = envoyconfig.DefaultMetricsNamespace + ".go_goroutines"
)

// sample is one point of the soak's curve.
type sample struct {
	Elapsed    time.Duration // since the soak load started
	RSSMB      float64       // Envoy's VmRSS
	Goroutines uint64        // the module's gauge, set at each stream end
	Requests   uint64        // downstream requests Envoy received so far
	Uptime     time.Duration // Envoy's own uptime (/server_info)
}

// sampleInterval takes about 300 points over a long run, one a second in
// a short one: the RSS windows of a 2-minute run then hold 24 samples each.
func sampleInterval(d time.Duration) time.Duration {
	return max(time.Second, d/300)
}

// sampleUntil samples p every interval until ctx ends. A failed sample (the
// admin interface not answering, Envoy gone) ends the sampling with the
// error: during a soak that is itself a finding.
func sampleUntil(ctx context.Context, p *proxy, start time.Time, interval time.Duration) ([]sample, error) {
	var samples []sample
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		s, err := takeSample(ctx, p, start)
		if err != nil {
			if ctx.Err() != nil {
				return samples, nil
			}
			return samples, err
		}
		samples = append(samples, s)
		select {
		case <-ctx.Done():
			return samples, nil
		case <-ticker.C:
		}
	}
}

func takeSample(ctx context.Context, p *proxy, start time.Time) (sample, error) {
	if p.envoy.Exited() {
		return sample{}, fmt.Errorf("envoy exited: %v", p.envoy.ExitError())
	}
	mem, err := procstat.ReadMemory(p.envoy.PID())
	if err != nil {
		return sample{}, fmt.Errorf("sample RSS: %w", err)
	}
	stats, err := p.envoy.Stats(ctx)
	if err != nil {
		return sample{}, fmt.Errorf("sample stats: %w", err)
	}
	info, err := p.envoy.ServerInfo(ctx)
	if err != nil {
		return sample{}, fmt.Errorf("sample uptime: %w", err)
	}
	return sample{
		Elapsed:    time.Since(start),
		RSSMB:      float64(mem.RSSBytes) / (1 << 20),
		Goroutines: stats[goroutinesStat],
		Requests:   stats[requestsStat],
		Uptime:     info.Uptime,
	}, nil
}

// writeCurveCSV writes the RSS curve: elapsed_s,rss_mb,goroutines,requests.
func writeCurveCSV(path string, samples []sample) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write RSS curve: %w", err)
	}
	w := csv.NewWriter(f)
	w.Write([]string{"elapsed_s", "rss_mb", "goroutines", "requests"})
	for _, s := range samples {
		w.Write([]string{
			strconv.FormatFloat(s.Elapsed.Seconds(), 'f', 1, 64),
			strconv.FormatFloat(s.RSSMB, 'f', 1, 64),
			strconv.FormatUint(s.Goroutines, 10),
			strconv.FormatUint(s.Requests, 10),
		})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("write RSS curve %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write RSS curve %s: %w", path, err)
	}
	return nil
}
