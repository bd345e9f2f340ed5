package knee

import (
	"math"
	"testing"
)

func TestStepVerdict(t *testing.T) {
	tests := []struct {
		name       string
		step       Step
		completion float64
		errRatio   float64
		passed     bool
	}{
		{"clean", Step{Scheduled: 1000, Completed: 1000}, 1, 0, true},
		{"completion at threshold", Step{Scheduled: 1000, Completed: 990}, 0.99, 0, true},
		{"completion below threshold", Step{Scheduled: 10000, Completed: 9899}, 0.9899, 0, false},
		{"errors at threshold", Step{Scheduled: 1000, Completed: 1000, Errors: 1}, 1, 0.001, true},
		{"errors above threshold", Step{Scheduled: 1000, Completed: 1000, Errors: 2}, 1, 0.002, false},
		{"nothing completed", Step{Scheduled: 1000}, 0, 1, false},
		{"nothing scheduled", Step{Completed: 10}, 0, 0, false},
		{"invalid despite good numbers", Step{Scheduled: 1000, Completed: 1000, Invalid: true}, 1, 0, false},
		{"within its latency objective", Step{Scheduled: 1000, Completed: 1000, MaxP99Ms: 50, P99Ms: 50}, 1, 0, true},
		{"over its latency objective", Step{Scheduled: 1000, Completed: 1000, MaxP99Ms: 50, P99Ms: 50.1}, 1, 0, false},
		{"latency not measured", Step{Scheduled: 1000, Completed: 1000, MaxP99Ms: 50, P99Ms: math.NaN()}, 1, 0, false},
		{"no objective, any latency", Step{Scheduled: 1000, Completed: 1000, P99Ms: 9000}, 1, 0, true},
		{"one attack through, clean otherwise", Step{Scheduled: 1000, Completed: 1000, Misses: 1}, 1, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.step.Completion(); got != tt.completion {
				t.Errorf("Completion() = %g, want %g", got, tt.completion)
			}
			if got := tt.step.ErrorRatio(); got != tt.errRatio {
				t.Errorf("ErrorRatio() = %g, want %g", got, tt.errRatio)
			}
			if got := tt.step.Passed(); got != tt.passed {
				t.Errorf("Passed() = %v, want %v", got, tt.passed)
			}
		})
	}
}
