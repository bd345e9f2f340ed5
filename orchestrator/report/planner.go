package report

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// plannerTarget is the traffic of the worked line under the planner's
// table: a round figure a platform team can scale from.
const plannerTarget = 10000

// writePlannerTable opens the report with what a capacity planner reads
// first: per configuration and p99 objective, the highest rate met and the
// cores per 1k RPS it costs there (the aggregate slo_knees.csv rows).
func writePlannerTable(b *bytes.Buffer, heading string, meta dataset.Metadata, slo []dataset.SLOKneeRow, summary []dataset.KneeRow) {
	if heading != "" {
		b.WriteString(heading + "\n\n")
	}
	rows := aggregateSLORows(slo)
	if len(rows) == 0 {
		b.WriteString("> No SLO knees were searched in this sweep.\n\n")
		return
	}
	objectives := sloObjectives(rows)
	cols := []string{"Config"}
	for _, o := range objectives {
		p := "p99 <= " + fmtNum(o, 0) + " ms"
		cols = append(cols, p+": RPS", p+": cores/1k")
	}
	writeTableHeader(b, cols)
	for _, config := range sloConfigs(rows) {
		cells := []string{"`" + config + "`"}
		for _, o := range objectives {
			r, ok := findSLORow(rows, config, o)
			switch {
			case !ok:
				cells = append(cells, "n/a", "n/a")
			case r.KneeRPS == 0:
				cells = append(cells, "< floor ("+r.Status+")", "n/a")
			default:
				cells = append(cells, sloRateText(r, censoredAbove(summary, config)), fmtNum(r.CoresPer1k, 3))
			}
		}
		writeTableRow(b, cells)
	}
	b.WriteString("\nThe rate is the highest at which the configuration passed with its p99, corrected for " +
		"coordinated omission, within the objective (searched to the plan's resolution below the capacity knee); " +
		"over several rounds it is their median, followed by the rounds' range where they differ (plan on its low end). " +
		"Cores per 1k RPS are measured at that rate.\n\n")
	for _, note := range sloMarkNotes(rows) {
		b.WriteString(note + "\n\n")
	}
	if line := workedLine(meta, rows, objectives); line != "" {
		b.WriteString(line + "\n\n")
	}
}

// contestedMark flags a rate met only by the last of its runs there (see
// dataset.SLOContested), and contestedNote says so under the table.
const (
	contestedMark = "†"
	contestedNote = contestedMark + " Met at this rate by the last of its runs there only (`slo_rule` last_run, the rule of " +
		"the sweeps made before it was replaced): another run at this rate was over the objective, so plan below it. " +
		"`steps.csv` has every run; sweeps with `slo_rule` every_run search below such a rate instead."
)

// thinMark flags a rate met on a thin p99 (dataset.SLOKneeRow.ThinP99),
// and thinNote says what that means.
const (
	thinMark = "§"
	thinNote = thinMark + " Its p99 there was read from fewer than %d calls (%d at the fewest, `calls_at_knee` in " +
		"`slo_knees.csv`): such a p99 is set by the window's ten slowest calls or fewer (below 100 calls, by its " +
		"slowest), so one slow call can decide whether the rate meets the objective. The rate is known only roughly; a longer window would place it better."
)

// sloMarkNotes are the notes on the marks sloRateText puts on rows: one
// per mark that any of the rows carries.
func sloMarkNotes(rows []dataset.SLOKneeRow) []string {
	var notes []string
	if slices.ContainsFunc(rows, func(r dataset.SLOKneeRow) bool { return r.KneeRPS > 0 && r.Status == dataset.SLOContested }) {
		notes = append(notes, contestedNote)
	}
	if slices.ContainsFunc(rows, dataset.SLOKneeRow.ThinP99) {
		notes = append(notes, fmt.Sprintf(thinNote, dataset.ThinP99Calls, dataset.FewestCalls(rows)))
	}
	return notes
}

// sloRateText is an objective's rate as the planner's table shows it.
func sloRateText(r dataset.SLOKneeRow, capacityCensoredAbove bool) string {
	text := strconv.Itoa(r.KneeRPS)
	atBound := r.Status == dataset.SLOAtBound || r.Status == dataset.SLOContested
	if atBound && capacityCensoredAbove {
		// Met at a capacity bound that is the ladder's top: the
		// configuration may serve more within the objective.
		text = ">= " + text
	}
	if r.Rounds > 1 && r.KneeMinRPS != r.KneeMaxRPS {
		// The median hides a round that met the objective only lower.
		text += " (" + fmtNum(r.KneeMinRPS, 0) + "-" + fmtNum(r.KneeMaxRPS, 0) + ")"
	}
	if r.Status == dataset.SLOContested {
		text += " " + contestedMark
	}
	if r.ThinP99() {
		text += " " + thinMark
	}
	return text
}

// censoredAbove reports whether a configuration's capacity knee (its
// all-rounds summary row) passed the top of the ladder.
func censoredAbove(summary []dataset.KneeRow, config string) bool {
	return slices.ContainsFunc(summary, func(k dataset.KneeRow) bool {
		return k.ConfigID == config && k.Censored == dataset.CensoredAbove
	})
}

// workedLine turns the first WAF row at the middle objective into
// instances: "N instances of C cores serve X RPS at p99 <= S". It plans
// on the rounds' low end, as the table's note says to, and passes over a
// rate another run there was over (contestedMark).
func workedLine(meta dataset.Metadata, rows []dataset.SLOKneeRow, objectives []float64) string {
	cpus, err := procstat.ParseCPUList(meta.CoreAssignment["proxy"])
	if err != nil || len(cpus) == 0 || len(objectives) == 0 {
		return ""
	}
	o := objectives[len(objectives)/2]
	for _, config := range sloConfigs(rows) {
		r, ok := findSLORow(rows, config, o)
		if !ok || r.KneeRPS <= 0 || r.Status == dataset.SLOContested || r.Flavor == plan.FlavorDirect || r.Flavor == plan.FlavorEnvoy {
			continue
		}
		rate, which := r.KneeRPS, ""
		if low := int(r.KneeMinRPS); r.Rounds > 1 && low > 0 && low < rate {
			rate, which = low, " in its lowest round"
		}
		n := int(math.Ceil(plannerTarget / float64(rate)))
		return fmt.Sprintf("Worked example: `%s` served %d RPS per proxy of %d core(s) at p99 <= %s ms%s, so %d instances of %d core(s) serve %d RPS at p99 <= %s ms.",
			config, rate, len(cpus), fmtNum(o, 0), which, n, len(cpus), plannerTarget, fmtNum(o, 0))
	}
	return ""
}

func aggregateSLORows(rows []dataset.SLOKneeRow) []dataset.SLOKneeRow {
	var out []dataset.SLOKneeRow
	for _, r := range rows {
		if r.Round == dataset.AllRounds {
			out = append(out, r)
		}
	}
	return out
}

// sloObjectives lists the objectives, tightest first.
func sloObjectives(rows []dataset.SLOKneeRow) []float64 {
	out := distinct(rows, func(r dataset.SLOKneeRow) float64 { return r.SLOMs })
	slices.Sort(out)
	return out
}

// sloConfigs lists the configurations in the order rows first name them.
func sloConfigs(rows []dataset.SLOKneeRow) []string {
	return distinct(rows, func(r dataset.SLOKneeRow) string { return r.ConfigID })
}

// distinct is f of every row, each value once, in first-seen order.
func distinct[T any, V comparable](rows []T, f func(T) V) []V {
	var out []V
	for _, r := range rows {
		if v := f(r); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func findSLORow(rows []dataset.SLOKneeRow, config string, slo float64) (dataset.SLOKneeRow, bool) {
	for _, r := range rows {
		if r.ConfigID == config && r.SLOMs == slo {
			return r, true
		}
	}
	return dataset.SLOKneeRow{}, false
}
