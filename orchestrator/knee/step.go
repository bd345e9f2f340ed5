package knee

import "time"

// Pass thresholds of a step (see the package documentation).
const (
	MinCompletion = 0.99
	MaxErrorRatio = 0.001
)

// Step is the outcome of one measured run at a target rate.
type Step struct {
	Target    int   // target rate, requests per second
	Scheduled int64 // calls the load generator planned, see Scheduled
	Completed int64 // calls that finished, whatever their status
	Errors    int64 // non-2xx responses plus socket errors
	// Invalid marks a run whose measurement cannot be trusted; it counts as
	// neither pass nor fail.
	Invalid        bool
	InvalidReasons []string
}

// Scheduled is the number of calls Fortio plans for a step: it computes
// floor(R*T) calls and splits them evenly over the connections, dropping the
// remainder, i.e. floor(R*T/c)*c. The arithmetic mirrors Fortio's own so the
// completion ratio compares like with like.
func Scheduled(rate int, duration time.Duration, conns int) int64 {
	if conns <= 0 || rate <= 0 || duration <= 0 {
		return 0
	}
	total := int64(float64(rate) * duration.Seconds())
	return total / int64(conns) * int64(conns)
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

// Passed reports whether the step sustained its target rate.
func (s Step) Passed() bool {
	return !s.Invalid && s.Completion() >= MinCompletion && s.ErrorRatio() <= MaxErrorRatio
}
