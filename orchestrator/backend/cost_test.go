package backend

import (
	"net/http"
	"syscall"
	"testing"
	"time"
)

func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestCostIsSpentPerRequest(t *testing.T) {
	tests := []struct {
		name            string
		cost            Cost
		minCPU, minWall time.Duration // per request
		maxCPU          time.Duration
	}{
		{"cpu", Cost{CPU: 20 * time.Millisecond}, 20 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond},
		{"sleep", Cost{Sleep: 20 * time.Millisecond}, 0, 20 * time.Millisecond, 5 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := StartWithCost("127.0.0.1:0", tc.cost)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			const requests = 5
			cpu, start := processCPU(t), time.Now()
			for range requests {
				resp, err := http.Get(s.URL() + "/")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			perCPU, perWall := (processCPU(t)-cpu)/requests, time.Since(start)/requests
			if perCPU < tc.minCPU || perCPU > tc.maxCPU || perWall < tc.minWall {
				t.Errorf("per request: %v CPU (want %v-%v), %v wall (want >= %v)", perCPU, tc.minCPU, tc.maxCPU, perWall, tc.minWall)
			}
		})
	}
}

func TestNegativeCostIsRejected(t *testing.T) {
	if _, err := StartWithCost("127.0.0.1:0", Cost{CPU: -time.Millisecond}); err == nil {
		t.Error("a negative CPU cost started a backend")
	}
}

func TestParseCostReadsItsString(t *testing.T) {
	for _, c := range []Cost{{CPU: 4 * time.Millisecond}, {Sleep: 50 * time.Millisecond}, {CPU: 1500 * time.Microsecond, Sleep: time.Second}} {
		got, err := ParseCost(c.String())
		if err != nil || got != c {
			t.Errorf("%s: %+v %v", c, got, err)
		}
	}
	for _, bad := range []string{"", "cpu=4ms", "cpu=x sleep=0s", "cpu=-1ms sleep=0s"} {
		if _, err := ParseCost(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestCostFromNotesFindsTheNote(t *testing.T) {
	c := Cost{CPU: 4 * time.Millisecond}
	got, ok := CostFromNotes([]string{"other", c.Note(), "resumed at ..."})
	if !ok || got != c {
		t.Errorf("%+v %v", got, ok)
	}
	if _, ok := CostFromNotes([]string{"other"}); ok {
		t.Error("found a cost in no note")
	}
}
