package sweep

import (
	"fmt"
	"io"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// progress prints one line per finished step with an estimate of the time
// left. The estimate assumes every unfinished configuration takes as many
// steps as the finished ones did on average (the ladder's length plus a
// few bisection steps before any has finished).
type progress struct {
	out          io.Writer
	start        time.Time
	stepTime     time.Duration
	totalConfigs int
	doneSteps    int
	stepsPerCfg  float64
	configsSeen  map[string]bool
}

func newProgress(p plan.Plan, j *dataset.Journal, out io.Writer) *progress {
	pr := &progress{
		out: out, start: time.Now(),
		stepTime:     p.Warmup + p.Measure + p.Cooldown,
		totalConfigs: len(p.Configs()) * p.Rounds,
		stepsPerCfg:  float64(len(p.Ladder) + 3),
		configsSeen:  map[string]bool{},
	}
	for _, r := range j.Rows() {
		pr.configsSeen[fmt.Sprintf("%d/%s", r.Round, r.ConfigID)] = true
	}
	return pr
}

func (p *progress) stepDone(cfg plan.Config, row dataset.StepRow) {
	p.doneSteps++
	p.configsSeen[fmt.Sprintf("%d/%s", row.Round, cfg.ID())] = true
	left := p.totalConfigs - len(p.configsSeen)
	eta := time.Duration(float64(left)*p.stepsPerCfg+2) * p.stepTime
	fmt.Fprintf(p.out, "[%d/%d configs, %s elapsed, ETA %s] r%d %s %s %d rps: %s, served %.0f rps, p99 %.2f ms%s\n",
		len(p.configsSeen), p.totalConfigs, time.Since(p.start).Round(time.Second), eta.Round(time.Second),
		row.Round, cfg.ID(), row.Kind, row.TargetRPS, row.Verdict, row.ServedRPS(), row.P99Ms, reasonSuffix(row))
}

func (p *progress) note(msg string) {
	fmt.Fprintf(p.out, "[%s elapsed] %s\n", time.Since(p.start).Round(time.Second), msg)
}

func reasonSuffix(row dataset.StepRow) string {
	if len(row.Reasons) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s)", row.Reasons[0])
}
