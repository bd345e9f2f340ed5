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
		// Counted by intended time: 1,042 responses arrived in the window,
		// 42 of them the warm-up's backlog (reference-light-headers-only-
		// json_10k's "served 388 rps" at 375); of the window's own calls
		// only 970 were answered.
		{"warm-up backlog not credited", Step{Scheduled: 1000, Completed: 1042, Intended: 1000, Answered: 970}, 0.97, 0, false},
		// At 60 RPS a 4 s window's arrivals miss 1% when latency at its
		// end is 40 ms longer than at its start: no failure of the proxy.
		{"window's edges, not a shortfall", Step{Scheduled: 240, Completed: 237, Intended: 240, Answered: 240,
			FirstFifthP50Ms: 12, LastFifthP50Ms: 14, RawP50Ms: 11}, 1, 0, true},
		// Accelerated full CRS on json_1k at 630 RPS, capacity about 590:
		// the tail drained the queue, so every call intended in the window
		// was answered, but its last fifth waited 450 ms for 103 ms of work.
		{"a queue drained in the tail", Step{Scheduled: 3150, Completed: 2845, Intended: 3150, Answered: 3150,
			FirstFifthP50Ms: 325, LastFifthP50Ms: 450, RawP50Ms: 103}, 1, 0, false},
		// Calibration's retry at 241 RPS: 99% answered, p50 500 ms and
		// growing: the queue grew through the window.
		{"growing queue", Step{Scheduled: 4820, Completed: 4800, Intended: 4820, Answered: 4790,
			FirstFifthP50Ms: 40, LastFifthP50Ms: 950, RawP50Ms: 4.2}, 0.9937759336099585, 0, false},
		{"steady within the allowances", Step{Scheduled: 1000, Completed: 1000, Intended: 1000, Answered: 1000,
			FirstFifthP50Ms: 1, LastFifthP50Ms: 7, RawP50Ms: 1}, 1, 0, true},
		{"just over the growth allowance", Step{Scheduled: 1000, Completed: 1000, Intended: 1000, Answered: 1000,
			FirstFifthP50Ms: 1, LastFifthP50Ms: 7.01, RawP50Ms: 5}, 1, 0, false},
		{"just over the backlog allowance", Step{Scheduled: 1000, Completed: 1000, Intended: 1000, Answered: 1000,
			FirstFifthP50Ms: 5, LastFifthP50Ms: 7.01, RawP50Ms: 1}, 1, 0, false},
		{"a warm-up backlog drained early in the window", Step{Scheduled: 1000, Completed: 1000, Intended: 1000, Answered: 1000,
			FirstFifthP50Ms: 300, LastFifthP50Ms: 2, RawP50Ms: 1.5}, 1, 0, true},
		{"too few calls a fifth to tell", Step{Scheduled: 40, Completed: 40, Intended: 40, Answered: 40,
			FirstFifthP50Ms: 1, LastFifthP50Ms: 100, RawP50Ms: 1}, 1, 0, true},
		{"fifths not measured", Step{Scheduled: 1000, Completed: 1000, Intended: 1000, Answered: 1000,
			FirstFifthP50Ms: math.NaN(), LastFifthP50Ms: math.NaN(), RawP50Ms: 1}, 1, 0, true},
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
