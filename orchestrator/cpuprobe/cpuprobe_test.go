package cpuprobe

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

func TestMeasureDoesTheWorkOnTheCPU(t *testing.T) {
	before := time.Now()
	p, err := Measure(context.Background(), 0, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// A unit scans about 1.3 KB; any CPU of this century does hundreds a second.
	if p.CPU != 0 || p.Rate < 100 || p.Spread < 0 || p.At.Before(before) || p.At.After(time.Now()) {
		t.Errorf("probe %+v", p)
	}
}

func TestMeasureRefuses(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		cpu  int
		d    time.Duration
		want string
	}{
		{"a negative CPU", context.Background(), -1, time.Millisecond, "want a CPU >= 0"},
		{"no time", context.Background(), 0, 0, "positive duration"},
		// The kernel refuses an affinity to a CPU the machine lacks: the
		// probe never runs unpinned.
		{"a CPU the machine lacks", context.Background(), 1000, time.Millisecond, "pin this thread to [1000]"},
		{"a cancelled sweep", cancelled, 0, time.Second, "context canceled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Measure(tc.ctx, tc.cpu, tc.d)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("probe %+v, err %v; want an error containing %q", p, err, tc.want)
			}
		})
	}
}

// The unit of work must scan the whole request: a pattern that matched
// early would make the probe measure almost nothing.
func TestThePatternsScanTheWholeRequest(t *testing.T) {
	if attacks.MatchString(request) {
		t.Fatal("the probe's patterns match its request")
	}
	for _, attack := range []string{"1 UNION/**/SELECT 2", "<script>", "x onload =", "../../etc", "/etc/passwd", "exec (", "sleep( 5"} {
		if !attacks.MatchString(request + attack) {
			t.Errorf("the patterns miss %q at the request's end", attack)
		}
	}
}

func TestMedianAndSpread(t *testing.T) {
	tests := []struct {
		rates          []float64
		median, spread float64
	}{
		{[]float64{100}, 100, 0},
		{[]float64{120, 100, 80}, 100, 0.4},
		{[]float64{90, 110, 100, 100}, 100, 0.2},
		{[]float64{50, 100, 100, 100, 100}, 100, 0.5}, // one slow slice moves the spread, not the median
	}
	for _, tc := range tests {
		median, spread := medianAndSpread(tc.rates)
		if math.Abs(median-tc.median) > 1e-9 || math.Abs(spread-tc.spread) > 1e-9 {
			t.Errorf("%v: median %v, spread %v; want %v, %v", tc.rates, median, spread, tc.median, tc.spread)
		}
	}
}

func TestSlower(t *testing.T) {
	base := Probe{Rate: 20000}
	for _, tc := range []struct {
		rate, want float64
	}{{20000, 0}, {17000, 0.15}, {25000, -0.25}} {
		if got := (Probe{Rate: tc.rate}).Slower(base); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%v against %v: %v slower, want %v", tc.rate, base.Rate, got, tc.want)
		}
	}
}
