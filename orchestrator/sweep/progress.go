package sweep

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// progress prints one line per finished step with an estimate of the time
// left. It counts in steps, not configurations: a censored Envoy climbs a
// short ladder and stops, a WAF configuration bisects, confirms and runs
// its SLO searches, about five times as many steps, so a mean over
// configurations said 6 minutes at the start of a 14-minute sweep and "0s"
// through its last WAF configuration.
//
// The time left is the steps expected, times the time a step has taken so
// far (deployments included). A configuration is expected to take as many
// steps as the finished ones of its class took (same WAF-ness, tier and
// shape; else same WAF-ness), and before any of its class finished the
// plan's guess (stepsGuess). A configuration that has already run past
// what was expected of it is given an eighth of its steps more. The Envoy
// baselines after each round are expected at one per WAF configuration
// and reported rate (the capacity knee and each objective's).
type progress struct {
	out   io.Writer
	now   func() time.Time
	start time.Time
	plan  plan.Plan
	// order is every configuration of the sweep, rounds included, in the
	// order they run.
	order []configStep
	// steps counts the steps recorded for each configuration (key), the
	// journal's of a resumed sweep included; baselines those of each
	// round's Envoy baselines.
	steps     map[string]int
	baselines map[int]int
	current   string
	// baselinesPerRound is the Envoy baselines expected of each round:
	// one per WAF configuration and rate it reports, its capacity knee's
	// and each objective's.
	baselinesPerRound float64
	// stepsHere and lastEnd time the steps this process ran: from its
	// start to the last step's end.
	stepsHere int
	lastEnd   time.Time
}

// configStep is a configuration of one round, and its key in steps.
type configStep struct {
	round int
	cfg   plan.Config
	key   string
}

func newProgress(p plan.Plan, j *dataset.Journal, out io.Writer) *progress {
	return newProgressAt(p, j.Rows(), out, time.Now)
}

func newProgressAt(p plan.Plan, recorded []dataset.StepRow, out io.Writer, now func() time.Time) *progress {
	pr := &progress{out: out, now: now, start: now(), plan: p, steps: map[string]int{}, baselines: map[int]int{}}
	for round := range p.Rounds {
		for _, cfg := range p.ConfigsForRound(round) {
			pr.order = append(pr.order, configStep{round, cfg, configKey(round, cfg.ID())})
			if round == 0 && plan.HasWAF(cfg.Flavor) && slices.Contains(p.Flavors, plan.FlavorEnvoy) {
				pr.baselinesPerRound += float64(1 + len(p.SLOs))
			}
		}
	}
	for _, r := range recorded {
		pr.count(r)
	}
	return pr
}

func configKey(round int, configID string) string { return fmt.Sprintf("%d/%s", round, configID) }

func (p *progress) count(row dataset.StepRow) {
	if row.Kind == dataset.KindBaseline {
		p.baselines[row.Round]++
		return
	}
	p.steps[configKey(row.Round, row.ConfigID)]++
}

func (p *progress) stepDone(cfg plan.Config, row dataset.StepRow) {
	now := p.now()
	row.ConfigID = cfg.ID()
	p.count(row)
	// The round's baselines come after its searches: none is current.
	p.current = ""
	if row.Kind != dataset.KindBaseline {
		p.current = configKey(row.Round, cfg.ID())
	}
	p.stepsHere++
	p.lastEnd = now
	fmt.Fprintf(p.out, "[%d/%d configs, %s elapsed, ETA %s] r%d %s %s %d rps: %s, served %.0f rps, p99 %.2f ms%s\n",
		len(p.steps), len(p.order), now.Sub(p.start).Round(time.Second), p.eta().Round(time.Second),
		row.Round, cfg.ID(), row.Kind, row.TargetRPS, row.Verdict, row.ServedRPS(), row.P99Ms, reasonSuffix(row))
}

// eta is the steps expected after the last one, at the time a step has
// taken so far in this process.
func (p *progress) eta() time.Duration {
	return time.Duration(p.stepsLeft() * float64(p.stepTime()))
}

// stepTime is the mean wall time of a step in this process, from its
// start, so that deployments and pre-checks are in it; before any step the
// plan's windows and tail plus a little for the step's edges.
func (p *progress) stepTime() time.Duration {
	if p.stepsHere == 0 {
		return p.plan.Warmup + p.plan.Measure + time.Second + p.plan.Cooldown + time.Second/2
	}
	return p.lastEnd.Sub(p.start) / time.Duration(p.stepsHere)
}

// stepsLeft is what the current configuration, those not started and the
// rounds' baselines are expected to take yet.
func (p *progress) stepsLeft() float64 {
	var left float64
	for _, c := range p.order {
		done, started := p.steps[c.key]
		switch {
		case c.key == p.current:
			left += max(p.expectedSteps(c.cfg)-float64(done), math.Ceil(float64(done)/8))
		case !started:
			left += p.expectedSteps(c.cfg)
		}
	}
	for round := range p.plan.Rounds {
		left += max(p.baselinesPerRound-float64(p.baselines[round]), 0)
	}
	return left
}

// expectedSteps is the mean step count of the finished configurations of
// cfg's class, or the plan's guess.
func (p *progress) expectedSteps(cfg plan.Config) float64 {
	for _, same := range []func(plan.Config) bool{
		func(o plan.Config) bool {
			return plan.HasWAF(o.Flavor) == plan.HasWAF(cfg.Flavor) && o.Tier == cfg.Tier && o.Shape == cfg.Shape
		},
		func(o plan.Config) bool { return plan.HasWAF(o.Flavor) == plan.HasWAF(cfg.Flavor) },
	} {
		var n, steps int
		for _, c := range p.order {
			if done, ok := p.steps[c.key]; ok && c.key != p.current && same(c.cfg) {
				n, steps = n+1, steps+done
			}
		}
		if n > 0 {
			return float64(steps) / float64(n)
		}
	}
	return p.stepsGuess(cfg)
}

// stepsGuess is a configuration's step count before any of its kind has
// finished: a configuration without a WAF climbs the ladder, and usually
// passes its top (its objectives then met at that bound); one with a WAF
// fails on the ladder's first rungs, then bisects and confirms in about
// ten steps, and searches each objective in about six more (what the
// committed datasets and the default sweep took).
func (p *progress) stepsGuess(cfg plan.Config) float64 {
	if !plan.HasWAF(cfg.Flavor) {
		return float64(len(p.plan.Ladder))
	}
	return 10 + 6*float64(len(p.plan.SLOs))
}

func (p *progress) note(msg string) {
	fmt.Fprintf(p.out, "[%s elapsed] %s\n", p.now().Sub(p.start).Round(time.Second), msg)
}

func reasonSuffix(row dataset.StepRow) string {
	if len(row.Reasons) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s)", row.Reasons[0])
}
