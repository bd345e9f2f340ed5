package soak

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/wafsweep/wafsweep/orchestrator/knee"
)

// summary is the soak's outcome, written as summary.json and logged as one
// line.
type summary struct {
	Duration  string      `json:"duration"`
	KneeRPS   int         `json:"knee_rps"`
	KneeSteps []knee.Step `json:"knee_steps"` // how the knee was found
	// RSSBoundPct is the RSS growth allowed for this run's length.
	RSSBoundPct float64 `json:"rss_bound_pct"`
	RateRPS     float64 `json:"rate_rps"`
	// Requests is what Envoy received during the soak, benign and attacks.
	Requests           uint64   `json:"requests"`
	BenignScheduled    int64    `json:"benign_scheduled"`
	BenignCompleted    int64    `json:"benign_completed"`
	BenignNon2xx       int64    `json:"benign_non_2xx"`
	BenignSocketErrors int64    `json:"benign_socket_errors"`
	Attacks            int      `json:"attacks"`
	AttacksBlocked     int      `json:"attacks_blocked"`
	AttackMisses       []string `json:"attack_misses,omitempty"`
	RSSStartMB         float64  `json:"rss_start_mb"`
	RSSEndMB           float64  `json:"rss_end_mb"`
	RSSMaxMB           float64  `json:"rss_max_mb"`
	// The growth bound compares the low RSS (10th percentile) just after
	// warm-up and at the end (see rssGrowth).
	RSSLowAfterWarmupMB float64 `json:"rss_p10_after_warmup_mb"`
	RSSLowEndMB         float64 `json:"rss_p10_end_mb"`
	RSSGrowthPct        float64 `json:"rss_growth_after_warmup_pct"`
	GoroutinesMin       uint64  `json:"goroutines_min"`
	GoroutinesMax       uint64  `json:"goroutines_max"`
	// Live Go heap of the module after each collection past warm-up (from
	// GODEBUG=gctrace=1): what the heap really holds, without the swing of
	// garbage waiting for the next collection.
	LiveHeapMinMB float64 `json:"live_heap_min_mb"`
	LiveHeapMaxMB float64 `json:"live_heap_max_mb"`
	Collections   int     `json:"collections"`
	Restarts      int     `json:"restarts"`
	EnvoyExited   bool    `json:"envoy_exited"`
	WAFBlocked    uint64  `json:"waf_blocked"` // corazawaf.blocked.* during the soak
	WAFErrors     uint64  `json:"waf_errors"`  // corazawaf.errors.*, whole run
	Samples       int     `json:"samples"`
	SampleError   string  `json:"sample_error,omitempty"`
}

func (s summary) line() string {
	return fmt.Sprintf("soak %s at %.0f RPS (%.0f%% of knee %d): requests %d (benign %d/%d completed, non-2xx %d, "+
		"socket errors %d; attacks %d, blocked %d); RSS start %.1f MB, end %.1f MB, max %.1f MB, low (p10) after "+
		"warm-up %.1f MB, at the end %.1f MB (%+.2f%%); live Go heap %.0f-%.0f MB over %d collections; goroutines %d-%d; "+
		"restarts %d; WAF errors %d",
		s.Duration, s.RateRPS, soakFraction*100, s.KneeRPS, s.Requests, s.BenignCompleted, s.BenignScheduled,
		s.BenignNon2xx, s.BenignSocketErrors, s.Attacks, s.AttacksBlocked, s.RSSStartMB, s.RSSEndMB, s.RSSMaxMB,
		s.RSSLowAfterWarmupMB, s.RSSLowEndMB, s.RSSGrowthPct, s.LiveHeapMinMB, s.LiveHeapMaxMB, s.Collections,
		s.GoroutinesMin, s.GoroutinesMax, s.Restarts, s.WAFErrors)
}

// problems lists every bound the soak broke, empty when it held.
func (s summary) problems() []string {
	var out []string
	add := func(broken bool, format string, args ...any) {
		if broken {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	add(s.SampleError != "", "sampling failed: %s", s.SampleError)
	add(s.EnvoyExited, "Envoy exited during the soak")
	add(s.Restarts > 0, "Envoy restarted %d times (uptime went backwards)", s.Restarts)
	add(s.BenignCompleted == 0, "no benign request completed")
	add(s.BenignNon2xx > 0, "%d benign requests got a non-2xx answer", s.BenignNon2xx)
	add(s.BenignSocketErrors > 0, "%d benign requests got no answer", s.BenignSocketErrors)
	add(s.Attacks == 0, "no attack was sent")
	add(s.AttacksBlocked != s.Attacks, "%d of %d attacks not blocked: %s",
		s.Attacks-s.AttacksBlocked, s.Attacks, strings.Join(s.AttackMisses, "; "))
	add(s.WAFBlocked != uint64(s.AttacksBlocked), "Envoy counted %d blocked streams, the attack loop %d blocked attacks",
		s.WAFBlocked, s.AttacksBlocked)
	add(s.WAFErrors > 0, "the module counted %d errors", s.WAFErrors)
	add(s.RSSGrowthPct > s.RSSBoundPct, "RSS grew %.2f%% after warm-up (p10 %.1f -> %.1f MB), bound %.0f%%",
		s.RSSGrowthPct, s.RSSLowAfterWarmupMB, s.RSSLowEndMB, s.RSSBoundPct)
	add(s.GoroutinesMax == 0, "the goroutine gauge was never set")
	add(s.GoroutinesMax-s.GoroutinesMin > maxGoroutineSpread, "goroutines moved from %d to %d, bound a spread of %d",
		s.GoroutinesMin, s.GoroutinesMax, maxGoroutineSpread)
	return out
}

func writeSummaryJSON(path string, s any) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
