package knee

import "math"

// Pass thresholds of a step (see the package documentation).
const (
	MinCompletion = 0.99
	MaxErrorRatio = 0.001
	// A step is not sustained when its queue grew through the window, the
	// median latency of the calls intended in its last fifth above
	// MaxLatencyGrowth times that of its first fifth plus
	// LatencyGrowthSlackMs, or when it ended with a backlog, that median
	// above MaxLatencyGrowth times the window's median raw latency (from
	// each call's actual send: what the proxy took) plus the slack. The
	// slack keeps sub-millisecond medians from failing on a scheduler
	// hiccup; the checks need MinFifthCalls calls intended in each fifth,
	// since a median of a handful is noise.
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
	// them that ended during the run (tail included): Completion is
	// Answered/Intended when Intended > 0, so that a proxy's backlog from
	// before the window, answered inside it, is never credited to it (a
	// queue the run's tail drains fails Sustained). Steps measured before
	// these were counted have Intended 0 and are judged on
	// Completed/Scheduled.
	Intended, Answered int64
	Errors             int64 // non-2xx responses plus socket errors
	// FirstFifthP50Ms and LastFifthP50Ms are the median corrected latency
	// of the calls intended in the window's first and last fifth (NaN:
	// not measured), RawP50Ms the window's median raw latency; see
	// Sustained.
	FirstFifthP50Ms, LastFifthP50Ms, RawP50Ms float64
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

// Completion is answered/intended (completed/scheduled for a step
// measured before those were counted), 0 when nothing was scheduled.
// Responses that arrived inside the window, counted against the schedule,
// credit a warm-up's backlog answered inside it (a step once passed at 375
// RPS serving 388), and in a short window at a low rate they miss by the
// window's edges alone: at 60 RPS a 4 s window misses 1% when latency at
// its end is 40 ms longer than at its start.
func (s Step) Completion() float64 {
	if s.Intended > 0 {
		return float64(s.Answered) / float64(s.Intended)
	}
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

// Sustained is false when the step's queue grew through its window or it
// ended with a backlog (see MaxLatencyGrowth): a rate the proxy does not
// sustain, whatever share of the calls it answered before the run
// stopped. The accelerated build on json_1k at 630 RPS (capacity about
// 590) answered every call of its window, the tail draining the queue,
// while its last fifth's median was 450 ms against 103 ms raw. True where
// it cannot be told: too few calls in a fifth, or a step measured before
// the fifths were.
func (s Step) Sustained() bool {
	grew, backlog := s.Unsustained()
	return !grew && !backlog
}

// Unsustained says why the step was not sustained: its queue grew through
// the window, it ended with a backlog, or both; neither where Sustained.
func (s Step) Unsustained() (grew, backlog bool) {
	if s.Intended < 5*MinFifthCalls || math.IsNaN(s.FirstFifthP50Ms) || math.IsNaN(s.LastFifthP50Ms) {
		return false, false
	}
	grew = s.LastFifthP50Ms > MaxLatencyGrowth*s.FirstFifthP50Ms+LatencyGrowthSlackMs
	backlog = !math.IsNaN(s.RawP50Ms) && s.LastFifthP50Ms > MaxLatencyGrowth*s.RawP50Ms+LatencyGrowthSlackMs
	return grew, backlog
}

// withinObjective is true without an objective; a NaN p99 is never within.
func (s Step) withinObjective() bool {
	return s.MaxP99Ms <= 0 || s.P99Ms <= s.MaxP99Ms
}
