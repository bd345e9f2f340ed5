package soak

import (
	"strings"
	"testing"
	"time"
)

// curve builds samples one second apart with the given RSS values.
func curve(rss ...float64) []sample {
	samples := make([]sample, len(rss))
	for i, v := range rss {
		samples[i] = sample{Elapsed: time.Duration(i) * time.Second, RSSMB: v, Goroutines: 3, Uptime: time.Duration(100+i) * time.Second}
	}
	return samples
}

func constant(n int, rss float64) []sample {
	values := make([]float64, n)
	for i := range values {
		values[i] = rss
	}
	return curve(values...)
}

func withDip(samples []sample, at int, rss float64) []sample {
	samples[at].RSSMB = rss
	return samples
}

func TestRSSGrowth(t *testing.T) {
	tests := []struct {
		name                  string
		samples               []sample
		total                 time.Duration
		wantAfterWarmup, want float64
		wantOK                bool
	}{
		{"flat after warm-up", curve(90, 95, 100, 100, 100, 100, 100, 100, 100, 100), 10 * time.Second, 100, 100, true},
		{"growing", curve(90, 95, 100, 110, 120, 130, 140, 150, 160, 170), 10 * time.Second, 100, 160, true},
		{"swings above the low level do not count", curve(90, 95, 100, 300, 100, 250, 100, 400, 100, 350), 10 * time.Second, 100, 100, true},
		{"one dip does not decide", withDip(constant(60, 100), 15, 50), 60 * time.Second, 100, 100, true},
		{"the last sample may land after the end", curve(90, 95, 100, 100, 100, 100, 100, 100, 100, 100, 100, 90), 10 * time.Second, 100, 90, true},
		{"no samples", nil, 10 * time.Second, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			afterWarmup, end, ok := rssGrowth(tt.samples, tt.total)
			if afterWarmup != tt.wantAfterWarmup || end != tt.want || ok != tt.wantOK {
				t.Errorf("rssGrowth = %v, %v, %v; want %v, %v, %v", afterWarmup, end, ok, tt.wantAfterWarmup, tt.want, tt.wantOK)
			}
		})
	}
}

func TestLiveHeapsFromGCTrace(t *testing.T) {
	log := "[info] envoy started\n" +
		"gc 27 @61.537s 1%: 3.0+163+0.007 ms clock, 6.0+0/88/57+0.014 ms cpu, 287->288->155 MB, 311 MB goal, 0 MB stacks, 0 MB globals, 2 P\n" +
		"[warning] not a gc line 1->2->3 MB\n" +
		"gc 28 @67.045s 1%: 0.27+272+0.24 ms clock, 0.55+0.95/148/40+0.49 ms cpu, 287->289->135 MB, 311 MB goal, 0 MB stacks, 0 MB globals, 2 P\n"
	got := liveHeaps([]byte(log))
	if len(got) != 2 || got[0] != 155 || got[1] != 135 {
		t.Errorf("live heaps %v, want [155 135]", got)
	}
}

func TestCountRestartsAndGoroutines(t *testing.T) {
	samples := curve(1, 1, 1, 1)
	samples[2].Uptime = time.Second // a fresh process answered
	samples[0].Goroutines, samples[3].Goroutines = 0, 9
	if n := countRestarts(samples); n != 1 {
		t.Errorf("countRestarts = %d, want 1", n)
	}
	if lo, hi := goroutineRange(samples); lo != 3 || hi != 9 {
		t.Errorf("goroutineRange = %d-%d, want 3-9 (an unset gauge ignored)", lo, hi)
	}
}

func TestSummaryProblems(t *testing.T) {
	healthy := summary{BenignCompleted: 100, Attacks: 4, AttacksBlocked: 4, WAFBlocked: 4,
		RSSLowAfterWarmupMB: 100, RSSLowEndMB: 104, RSSGrowthPct: 4, RSSBoundPct: 5, GoroutinesMin: 3, GoroutinesMax: 4}
	tests := []struct {
		name   string
		modify func(*summary)
		want   string // substring of the one expected problem; "" for none
	}{
		{"healthy", func(*summary) {}, ""},
		{"benign non-2xx", func(s *summary) { s.BenignNon2xx = 1 }, "non-2xx"},
		{"benign without answer", func(s *summary) { s.BenignSocketErrors = 2 }, "no answer"},
		{"attack through", func(s *summary) { s.AttacksBlocked, s.WAFBlocked, s.AttackMisses = 3, 3, []string{"XSS: status 200"} }, "XSS: status 200"},
		{"benign blocked", func(s *summary) { s.WAFBlocked = 5 }, "blocked streams"},
		{"restart", func(s *summary) { s.Restarts = 1 }, "restarted"},
		{"crash", func(s *summary) { s.EnvoyExited = true }, "exited"},
		{"RSS growth", func(s *summary) { s.RSSLowEndMB, s.RSSGrowthPct = 106, 6 }, "RSS grew"},
		{"RSS growth within a short run's bound", func(s *summary) { s.RSSGrowthPct, s.RSSBoundPct = 12, 20 }, ""},
		{"goroutine leak", func(s *summary) { s.GoroutinesMax = 30 }, "goroutines moved"},
		{"module errors", func(s *summary) { s.WAFErrors = 2 }, "errors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := healthy
			tt.modify(&s)
			problems := s.problems()
			switch {
			case tt.want == "" && len(problems) > 0:
				t.Errorf("problems %q, want none", problems)
			case tt.want != "" && (len(problems) != 1 || !strings.Contains(problems[0], tt.want)):
				t.Errorf("problems %q, want one mentioning %q", problems, tt.want)
			}
		})
	}
}

func TestRSSBoundFollowsTheRunLength(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want float64
	}{{2 * time.Minute, shortRunRSSGrowth}, {30 * time.Minute, maxRSSGrowth}, {longRun, maxRSSGrowth}} {
		if got := rssBound(tt.d); got != tt.want {
			t.Errorf("rssBound(%v) = %v, want %v", tt.d, got, tt.want)
		}
	}
}
