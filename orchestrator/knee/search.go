package knee

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Kind says why the search asks for a rate.
type Kind string

const (
	KindLadder  Kind = "ladder"  // walking the ladder upwards
	KindBisect  Kind = "bisect"  // narrowing the gap between pass and fail
	KindConfirm Kind = "confirm" // re-running the highest pass
	KindRetry   Kind = "retry"   // repeating a rate whose run was invalid
	// KindDescend halves the rate below the ladder (Options.Floor) after the
	// bottom of the ladder failed, until a rate passes.
	KindDescend Kind = "descend"
)

// Options tune the search. Zero values take the defaults, so Options{Confirm:
// true} is the reference method.
type Options struct {
	Confirm bool // re-run the highest pass before accepting it
	// MaxInvalidRetries is how often an invalid run is repeated before the
	// search gives up: 0 means the default (1), negative means never.
	MaxInvalidRetries int
	MinGap            int     // RPS; default 250 (scaled down below the ladder)
	GapFraction       float64 // of the highest pass; default 0.05
	// Floor enables the descent below the ladder (see the package
	// documentation): when the bottom of the ladder fails, the rate is
	// halved down to Floor RPS until one passes. 0 is off, the notes'
	// definition; otherwise it must be below the ladder's first rate.
	Floor int
}

// DefaultOptions is the reference method of the notes (no descent below the
// ladder: Floor 0).
func DefaultOptions() Options {
	return Options{Confirm: true, MaxInvalidRetries: 1, MinGap: 250, GapFraction: 0.05}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.MaxInvalidRetries == 0 {
		o.MaxInvalidRetries = d.MaxInvalidRetries
	}
	if o.MaxInvalidRetries < 0 {
		o.MaxInvalidRetries = 0
	}
	if o.MinGap == 0 {
		o.MinGap = d.MinGap
	}
	if o.GapFraction == 0 {
		o.GapFraction = d.GapFraction
	}
	return o
}

// Search is the knee search of one configuration. Ask Next for a rate, run
// it, Record the step, repeat until Next reports done, then read Result.
type Search struct {
	ladder []int
	opts   Options
	steps  []Step

	nextRung    int // index in ladder of the next ladder step
	highestPass int // 0: none yet
	lowestFail  int // 0: none yet

	rate    int  // the rate Next asks for
	kind    Kind // how Next labels it (KindRetry while retrying)
	purpose Kind // why it is asked (never KindRetry)
	retries int  // invalid runs in a row at rate

	done          bool
	censoredAbove bool
	censoredBelow bool
	invalid       bool
	reasons       []string
	confirmed     bool
}

// NewSearch starts a search over an ascending ladder of positive rates.
func NewSearch(ladder []int, opts Options) (*Search, error) {
	if err := checkLadder(ladder); err != nil {
		return nil, err
	}
	if opts.MinGap < 0 || opts.GapFraction < 0 || opts.GapFraction >= 1 {
		return nil, fmt.Errorf("knee options: MinGap %d and GapFraction %g must be >= 0 (GapFraction < 1)", opts.MinGap, opts.GapFraction)
	}
	if opts.Floor < 0 || opts.Floor >= ladder[0] {
		return nil, fmt.Errorf("knee options: Floor %d must be 0 (no descent) or between 1 and %d, below the ladder's first rate", opts.Floor, ladder[0]-1)
	}
	s := &Search{ladder: slices.Clone(ladder), opts: opts.withDefaults()}
	s.ask(ladder[0], KindLadder)
	return s, nil
}

func checkLadder(ladder []int) error {
	if len(ladder) == 0 {
		return errors.New("knee search: empty ladder")
	}
	for i, r := range ladder {
		if r <= 0 || (i > 0 && r <= ladder[i-1]) {
			return fmt.Errorf("knee search: ladder %v must be positive and strictly ascending", ladder)
		}
	}
	return nil
}

// Next returns the rate to run and why, or done once the search is over.
func (s *Search) Next() (rate int, kind Kind, done bool) {
	if s.done {
		return 0, "", true
	}
	return s.rate, s.kind, false
}

// Record feeds the outcome of the step Next asked for. It fails, leaving the
// search unchanged, when the search is over or the step's target is not the
// rate asked for.
func (s *Search) Record(step Step) error {
	if s.done {
		return fmt.Errorf("knee search: step at %d RPS recorded after the search ended", step.Target)
	}
	if step.Target != s.rate {
		return fmt.Errorf("knee search: step at %d RPS recorded, but the search asked for %d RPS (%s)", step.Target, s.rate, s.kind)
	}
	step.InvalidReasons = slices.Clone(step.InvalidReasons)
	s.steps = append(s.steps, step)
	if step.Invalid {
		s.onInvalid()
		return nil
	}
	s.retries = 0
	switch s.purpose {
	case KindLadder:
		s.onLadder(step.Passed())
	case KindBisect:
		s.onBisect(step.Passed())
	case KindConfirm:
		s.onConfirm(step.Passed())
	case KindDescend:
		s.onDescend(step.Passed())
	}
	return nil
}

func (s *Search) ask(rate int, purpose Kind) {
	s.rate, s.kind, s.purpose = rate, purpose, purpose
}

func (s *Search) onInvalid() {
	if s.retries < s.opts.MaxInvalidRetries {
		s.retries++
		s.kind = KindRetry
		return
	}
	s.done, s.invalid = true, true
	s.reasons = s.invalidReasons()
}

// invalidReasons collects the distinct reasons of the invalid runs in a row
// that ended the search.
func (s *Search) invalidReasons() []string {
	var reasons []string
	for _, st := range s.steps[len(s.steps)-1-s.retries:] {
		for _, r := range st.InvalidReasons {
			if !slices.Contains(reasons, r) {
				reasons = append(reasons, r)
			}
		}
	}
	if len(reasons) == 0 {
		reasons = []string{fmt.Sprintf("step at %d RPS invalid (no reason given)", s.rate)}
	}
	return reasons
}

func (s *Search) onLadder(passed bool) {
	if !passed {
		s.lowestFail = s.rate
		if s.highestPass == 0 {
			s.descendOrCensor()
			return
		}
		s.refine()
		return
	}
	s.highestPass = s.rate
	s.nextRung++
	if s.nextRung == len(s.ladder) {
		s.done, s.censoredAbove = true, true
		return
	}
	s.ask(s.ladder[s.nextRung], KindLadder)
}

func (s *Search) onBisect(passed bool) {
	if passed {
		s.highestPass = s.rate
	} else {
		s.lowestFail = s.rate
	}
	s.refine()
}

// onConfirm accepts the knee, or, when the re-run fails, moves the lowest
// fail down to it and falls back on the best pass below.
func (s *Search) onConfirm(passed bool) {
	if passed {
		s.done, s.confirmed = true, true
		return
	}
	s.lowestFail = s.rate
	s.highestPass = s.highestPassBelow(s.rate)
	if s.highestPass == 0 {
		s.descendOrCensor()
		return
	}
	s.refine()
}

// onDescend bisects above the first passing rate of the descent, or goes on
// down.
func (s *Search) onDescend(passed bool) {
	if passed {
		s.highestPass = s.rate
		s.refine()
		return
	}
	s.lowestFail = s.rate
	s.descendOrCensor()
}

// descendOrCensor handles a failure at the lowest rate tried so far (nothing
// passed below it): with a Floor under that rate the search halves the rate,
// otherwise it is censored below.
func (s *Search) descendOrCensor() {
	if s.opts.Floor > 0 && s.rate > s.opts.Floor {
		s.ask(descendRate(s.rate, s.opts.Floor), KindDescend)
		return
	}
	s.done, s.censoredBelow = true, true
}

// descendRate halves rate, rounded down to a multiple of 10, but never below
// floor, so the last rate of a descent is exactly floor. For rate > floor > 0
// it is below rate.
func descendRate(rate, floor int) int {
	return max(rate/2/10*10, floor)
}

func (s *Search) highestPassBelow(rate int) int {
	best := 0
	for _, st := range s.steps {
		if st.Passed() && st.Target < rate && st.Target > best {
			best = st.Target
		}
	}
	return best
}

// refine bisects while the gap between highest pass and lowest fail is wider
// than the tolerance, then confirms (or accepts) the highest pass.
func (s *Search) refine() {
	mid := s.midpoint()
	if !s.gapClosed() && mid > s.highestPass && mid < s.lowestFail {
		s.ask(mid, KindBisect)
		return
	}
	if s.opts.Confirm {
		s.ask(s.highestPass, KindConfirm)
		return
	}
	s.done = true
}

func (s *Search) gapClosed() bool {
	return float64(s.lowestFail-s.highestPass) <= s.gapTolerance()
}

// gapTolerance is max(MinGap * scale, GapFraction * highest pass) with
// scale = min(1, highest pass / bottom of the ladder): the absolute part
// shrinks in proportion below the ladder, so that a 250 RPS gap does not end
// the bisection between, say, 120 and 250 RPS. On the ladder scale is 1,
// which is the notes' max(MinGap, GapFraction * highest pass).
func (s *Search) gapTolerance() float64 {
	pass := float64(s.highestPass)
	scale := math.Min(1, pass/float64(s.ladder[0]))
	return math.Max(float64(s.opts.MinGap)*scale, s.opts.GapFraction*pass)
}

// midpoint of the highest pass and the lowest fail, rounded to a round
// unit (50, 10, 5 or 1 RPS) no larger than half the gap tolerance, so that
// bisected rates stay round numbers without the rounding, rather than the
// measurement, setting the knee's resolution.
func (s *Search) midpoint() int {
	half := s.gapTolerance() / 2
	unit := 1
	for _, u := range []int{50, 10, 5} {
		if float64(u) <= half {
			unit = u
			break
		}
	}
	return roundedMidpoint(s.highestPass, s.lowestFail, unit)
}

func roundedMidpoint(lo, hi, unit int) int {
	return (lo + hi + unit) / (2 * unit) * unit
}

// Result is the outcome of a search (partial while it is not Done).
type Result struct {
	Done bool
	// Knee is the highest confirmed passing rate; the top of the ladder when
	// CensoredAbove; 0 when CensoredBelow or Invalid.
	Knee          int
	CensoredAbove bool // knee >= top of the ladder (Bound)
	CensoredBelow bool // knee < the lowest rate tried (Bound)
	// Bound is the censoring bound: the top of the ladder when
	// CensoredAbove (knee >= Bound), the lowest rate tried when
	// CensoredBelow (knee < Bound: the bottom of the ladder, or Floor after a
	// descent); 0 otherwise.
	Bound      int
	Invalid    bool
	Reasons    []string // why the search is invalid
	LowestFail int      // lowest failing rate, 0 when none failed
	Confirmed  bool     // the knee passed its confirmation re-run
	Steps      []Step   // every recorded step, in order
}

// Result reports the search so far.
func (s *Search) Result() Result {
	r := Result{
		Done:          s.done,
		Knee:          s.highestPass,
		CensoredAbove: s.censoredAbove,
		CensoredBelow: s.censoredBelow,
		Invalid:       s.invalid,
		Reasons:       slices.Clone(s.reasons),
		LowestFail:    s.lowestFail,
		Confirmed:     s.confirmed,
		Steps:         cloneSteps(s.steps),
	}
	if s.censoredBelow || s.invalid {
		r.Knee = 0
	}
	switch {
	case s.censoredAbove:
		r.Bound = s.ladder[len(s.ladder)-1]
	case s.censoredBelow:
		r.Bound = s.lowestTried()
	case s.invalid && s.highestPass > 0:
		// The measurements became untrustworthy above a rate that passed
		// (typically the load generator ran out of CPU): that rate is still
		// a lower bound of the knee.
		r.Bound = s.highestPass
	}
	return r
}

// lowestTried is the lowest target of the recorded steps, 0 without steps.
func (s *Search) lowestTried() int {
	lowest := 0
	for _, st := range s.steps {
		if lowest == 0 || st.Target < lowest {
			lowest = st.Target
		}
	}
	return lowest
}

func cloneSteps(steps []Step) []Step {
	out := make([]Step, len(steps))
	for i, st := range steps {
		st.InvalidReasons = slices.Clone(st.InvalidReasons)
		out[i] = st
	}
	return out
}

// Replay rebuilds a search from steps recorded earlier (the resume journal),
// failing if they are not what the search would have asked for. The returned
// search continues where the recorded steps stop.
func Replay(ladder []int, opts Options, steps []Step) (*Search, error) {
	s, err := NewSearch(ladder, opts)
	if err != nil {
		return nil, err
	}
	for i, st := range steps {
		if err := s.Record(st); err != nil {
			return nil, fmt.Errorf("replay step %d: %w", i, err)
		}
	}
	return s, nil
}
