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
