package sweep

import (
	"math"
	"sync/atomic"
	"testing"
	"time"
)

func TestPeakStealRate(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(100, 0).Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name     string
		readings []stealReading
		want     float64
	}{
		{"steady", []stealReading{{at(0), 1}, {at(1000), 1.01}, {at(2000), 1.02}}, 0.01},
		{"one burst", []stealReading{{at(0), 1}, {at(1000), 1.01}, {at(2000), 1.31}, {at(3000), 1.32}}, 0.30},
		// One 10 ms tick in the last 100 ms is no 10% rate: the tail is
		// measured with the second before it.
		{"a short tail", []stealReading{{at(0), 1}, {at(1000), 1}, {at(2000), 1}, {at(2100), 1.01}}, 0.01 / 1.1},
		{"unreadable", []stealReading{{at(0), -1}, {at(1000), -1}}, math.NaN()},
		{"one reading", []stealReading{{at(0), 1}}, math.NaN()},
		{"a reading missing between", []stealReading{{at(0), 1}, {at(1000), -1}, {at(2000), 1.2}, {at(3000), 1.25}}, 0.05},
	} {
		got := peakStealRate(tc.readings, 500*time.Millisecond)
		if math.IsNaN(tc.want) != math.IsNaN(got) || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: peak %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The watch reads on its own until finished, and reports the burst.
func TestStealWatchFindsABurst(t *testing.T) {
	var calls atomic.Int64
	read := func() float64 {
		if calls.Add(1) >= 4 { // from the fourth reading on, 0.5 s more
			return 1.5
		}
		return 1
	}
	w := &stealWatch{read: read, stop: make(chan struct{}), done: make(chan struct{})}
	w.take()
	go w.loop(20 * time.Millisecond)
	time.Sleep(150 * time.Millisecond)
	w.finish() // stealEvery/2 as the shortest interval: one interval, the whole run
	if n := calls.Load(); n < 5 {
		t.Fatalf("%d readings in 150 ms at one per 20 ms", n)
	}
	if peak := peakStealRate(w.got, 10*time.Millisecond); !(peak > 1) {
		t.Errorf("peak %v: 0.5 s taken within 20 ms is far over one CPU's second", peak)
	}
}
