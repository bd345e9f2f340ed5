package knee

import "math"

// Pass thresholds of a step (see the package documentation).
const (
	MinCompletion = 0.99
	MaxErrorRatio = 0.001
	// A step is not sustained when the median latency of the calls
	// intended in its window's last fifth exceeds MaxLatencyGrowth times
	// that of its first fifth plus LatencyGrowthSlackMs: its queue grew
	// through the window. The slack keeps sub-millisecond medians from
	// failing on a scheduler hiccup; the check needs MinFifthCalls calls
	// intended in each fifth, since a median of a handful is noise.
	MaxLatencyGrowth     = 2.0
	LatencyGrowthSlackMs = 5.0
	MinFifthCalls        = 10
)

// Step is the outcome of one measured run at a target rate.
type Step struct {
	Target    int   // target rate, requests per second
	Scheduled int64 // target * window: the calls an open-loop client starts in the window
	Completed int64 // calls whose response arrived inside the window, whatever their status
	// Intended counts the calls intended in the window, Answered those of
	// them that ended during the run (tail included). With them a step
	// must pass two counts (see Completion): steps measured before they
	// were counted have Intended 0 and are judged on Completed/Scheduled
	// alone.
	Intended, Answered int64
	Errors             int64 // non-2xx responses plus socket errors
	// FirstFifthP50Ms and LastFifthP50Ms are the median corrected latency
	// of the calls intended in the window's first and last fifth (NaN:
	// not measured); see Sustained.
	FirstFifthP50Ms, LastFifthP50Ms float64
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

// Completion is the lower of two shares, 0 when nothing was scheduled:
// the responses that arrived inside the window per call scheduled in it
// (completed/scheduled: the proxy's throughput over the window), and the
// calls intended inside the window that were answered (answered/intended,
// when counted). Each alone can be fooled: a warm-up backlog answered
// inside the window raises the first above 1 (served 388 RPS at 375),
// and a queue that the run's tail still drains lets the second reach 1
// while the window served 90% of its rate (569 RPS at 630).
func (s Step) Completion() float64 {
	arrived := s.arrivedShare()
	if s.Intended > 0 {
		return min(arrived, float64(s.Answered)/float64(s.Intended))
	}
	return arrived
}

func (s Step) arrivedShare() float64 {
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
	return !s.Invalid && s.Completion() >= MinCompletion && s.ErrorRatio() <= MaxErrorRatio && s.Misses == 0 &&
		s.withinObjective() && s.Sustained()
}

// Sustained is false when the step's latency grew through its window (see
// MaxLatencyGrowth): a queue that grows is a rate the proxy does not
// sustain, whatever share of the calls it answered before the run
// stopped. True where it cannot be told: too few calls in a fifth, or a
// step measured before the fifths were.
func (s Step) Sustained() bool {
	if s.Intended < 5*MinFifthCalls || math.IsNaN(s.FirstFifthP50Ms) || math.IsNaN(s.LastFifthP50Ms) {
		return true
	}
	return s.LastFifthP50Ms <= MaxLatencyGrowth*s.FirstFifthP50Ms+LatencyGrowthSlackMs
}

// withinObjective is true without an objective; a NaN p99 is never within.
func (s Step) withinObjective() bool {
	return s.MaxP99Ms <= 0 || s.P99Ms <= s.MaxP99Ms
}
