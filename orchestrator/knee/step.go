package knee

// Pass thresholds of a step (see the package documentation).
const (
	MinCompletion = 0.99
	MaxErrorRatio = 0.001
)

// Step is the outcome of one measured run at a target rate.
type Step struct {
	Target    int   // target rate, requests per second
	Scheduled int64 // target * window: the calls an open-loop client starts in the window
	Completed int64 // calls whose response arrived inside the window, whatever their status
	Errors    int64 // non-2xx responses plus socket errors
	// Misses are calls whose status says the WAF did not do its job: an
	// attack sent with the load that was not blocked (or not passed where
	// nothing inspects), a benign call that was blocked. One fails the
	// step, whatever the error ratio allows.
	Misses int64
	// Invalid marks a run whose measurement cannot be trusted; it counts as
	// neither pass nor fail.
	Invalid        bool
	InvalidReasons []string
	// MaxP99Ms, when positive, makes the step a latency objective's: it
	// passes only if its p99 (corrected for coordinated omission) is
	// within it as well. P99Ms is that p99; NaN counts as over.
	MaxP99Ms, P99Ms float64
}

// Completion is completed/scheduled, 0 when nothing was scheduled.
func (s Step) Completion() float64 {
	if s.Scheduled <= 0 {
		return 0
	}
	return float64(s.Completed) / float64(s.Scheduled)
}

// ErrorRatio is errors/completed; 1 when nothing completed, since a run that
// completed nothing cannot claim a low error rate.
func (s Step) ErrorRatio() float64 {
	if s.Completed <= 0 {
		return 1
	}
	return float64(s.Errors) / float64(s.Completed)
}

// Passed reports whether the step sustained its target rate (within its
// latency objective, when it has one).
func (s Step) Passed() bool {
	return !s.Invalid && s.Completion() >= MinCompletion && s.ErrorRatio() <= MaxErrorRatio && s.Misses == 0 && s.withinObjective()
}

// withinObjective is true without an objective; a NaN p99 is never within.
func (s Step) withinObjective() bool {
	return s.MaxP99Ms <= 0 || s.P99Ms <= s.MaxP99Ms
}
