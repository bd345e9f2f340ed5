package sweep

import (
	"fmt"
	"io"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// progress prints one line per finished step with an estimate of the time
// left: the mean wall time of the configurations this process has
// finished, times those left, less what the current one has already
// taken. Configurations differ a lot (an overloaded step of a slow WAF
// takes minutes to drain, a censored Envoy climbs the ladder and stops),
// and so does the time of a step from its plan's windows (deployment,
// settling, SLO searches), so before any configuration has finished the
// estimate is a guess from the plan: the ladder's length plus a few
// bisection steps of the plan's window each.
type progress struct {
	out          io.Writer
	now          func() time.Time
	start        time.Time
	guess        time.Duration // per configuration, before one finishes
	totalConfigs int
	configsSeen  map[string]bool
	current      string    // the configuration whose steps are running
	currentStart time.Time // when its first step (in this process) ended
	finished     int       // configurations finished in this process
	finishedTime time.Duration
}

func newProgress(p plan.Plan, j *dataset.Journal, out io.Writer) *progress {
	return newProgressAt(p, j.Rows(), out, time.Now)
}

func newProgressAt(p plan.Plan, recorded []dataset.StepRow, out io.Writer, now func() time.Time) *progress {
	pr := &progress{
		out: out, now: now, start: now(),
		guess:        time.Duration(len(p.Ladder)+3) * (p.Warmup + p.Measure + p.Cooldown),
		totalConfigs: len(p.Configs()) * p.Rounds,
		configsSeen:  map[string]bool{},
	}
	for _, r := range recorded {
		pr.configsSeen[configKey(r.Round, r.ConfigID)] = true
	}
	return pr
}

func configKey(round int, configID string) string { return fmt.Sprintf("%d/%s", round, configID) }

func (p *progress) stepDone(cfg plan.Config, row dataset.StepRow) {
	now := p.now()
	key := configKey(row.Round, cfg.ID())
	// A round's Envoy baselines come after its searches and are not a
	// configuration of their own.
	if row.Kind != dataset.KindBaseline && key != p.current {
		if p.current != "" {
			p.finished++
			p.finishedTime += now.Sub(p.currentStart)
		}
		p.current, p.currentStart = key, now
		p.configsSeen[key] = true
	}
	fmt.Fprintf(p.out, "[%d/%d configs, %s elapsed, ETA %s] r%d %s %s %d rps: %s, served %.0f rps, p99 %.2f ms%s\n",
		len(p.configsSeen), p.totalConfigs, now.Sub(p.start).Round(time.Second), p.eta(now).Round(time.Second),
		row.Round, cfg.ID(), row.Kind, row.TargetRPS, row.Verdict, row.ServedRPS(), row.P99Ms, reasonSuffix(row))
}

// eta is the time left: the configurations not started, and what is left
// of the current one, at the mean time of a finished configuration.
func (p *progress) eta(now time.Time) time.Duration {
	perConfig := p.guess
	if p.finished > 0 {
		perConfig = p.finishedTime / time.Duration(p.finished)
	}
	notStarted := time.Duration(p.totalConfigs - len(p.configsSeen))
	currentLeft := max(0, perConfig-now.Sub(p.currentStart))
	return notStarted*perConfig + currentLeft
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
