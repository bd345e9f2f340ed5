package report

import (
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// Headline renders what the project's README quotes from a committed
// dataset: what was measured, the planner's table when the sweep searched
// SLO knees, the knee table, and the served-rate plot of its first
// panel. It reads only the dataset's files, so the README's figures are
// regenerated from them (make readme-figures) and a test can tell when
// they are not. shownDir is how the README names the dataset's directory.
func Headline(dir, shownDir string) ([]byte, error) {
	sw, err := dataset.ReadSweep(dir)
	if err != nil {
		return nil, err
	}
	meta, steps, slo := sw.Meta, sw.Steps, sw.SLOKnees
	summary := sortedSummary(sw)
	var b bytes.Buffer
	fmt.Fprintf(&b, "**`%s`** (%s, %s of %s windows", shownDir, meta.Target, count(meta.Plan.Rounds, "round"), meta.Plan.Measure)
	if t := meta.Plan.Transport(); !t.IsDefault() {
		fmt.Fprintf(&b, ", over %s", t.Name())
	}
	if env := meta.Plan.EnvoyEnv; len(env) > 0 {
		fmt.Fprintf(&b, ", Envoy with %s", mdText(strings.Join(env, " ")))
	}
	if !meta.FinishedAt.IsZero() {
		fmt.Fprintf(&b, ", finished %s", meta.FinishedAt.Format("2006-01-02"))
	}
	b.WriteString(")")
	if line := calibrationLine(meta, summary); line != "" {
		b.WriteString(": " + line)
	}
	b.WriteString("\n\n")
	if len(aggregateSLORows(slo)) > 0 {
		writePlannerTable(&b, "", meta, slo, summary)
	}
	writeTableHeader(&b, []string{"Config", "Knee RPS", "Rounds (min-max)", "Cores per 1k RPS at the knee", "p50 ms at the knee", "p99 ms at the knee"})
	for _, k := range summary {
		writeTableRow(&b, []string{"`" + k.ConfigID + "`", kneeText(k), roundsText(k),
			fmtNum(k.CoresPer1kAtKnee, 2), fmtNum(k.P50MsAtKnee, 1), fmtNum(k.P99MsAtKnee, 1)})
	}
	b.WriteString("\n")
	writeContestedKneeNote(&b, summary)
	if tier, shape, ok := firstPanel(steps); ok {
		// The served-rate plot Generate drew for that panel (named, not redrawn).
		fmt.Fprintf(&b, "![%s](%s)\n", mdText(servedTitle(tier, shape)), path.Join(shownDir, "plots", plotFile(servedPlotName, tier, shape)))
	}
	return b.Bytes(), nil
}

// firstPanel is the first tier x shape with valid runs, in the order
// Generate draws its panels.
func firstPanel(steps []dataset.StepRow) (tier, shape string, ok bool) {
	for _, tier := range panelTiers(steps) {
		for _, shape := range panelShapes(steps) {
			if len(inPanel(steps, tier, shape)) > 0 {
				return tier, shape, true
			}
		}
	}
	return "", "", false
}

func roundsText(k dataset.KneeRow) string {
	if k.Rounds <= 1 {
		return strconv.Itoa(k.Rounds)
	}
	return fmt.Sprintf("%d (%s-%s)", k.Rounds, fmtNum(k.KneeMinRPS, 0), fmtNum(k.KneeMaxRPS, 0))
}

// calibrationLine states a calibration sweep's known answers beside what
// it measured.
func calibrationLine(meta dataset.Metadata, summary []dataset.KneeRow) string {
	cal, ok := calibrationOf(meta, summary)
	if !ok {
		return ""
	}
	parts := make([]string, len(cal.facts))
	for i, f := range cal.facts {
		parts[i] = fmt.Sprintf("known %s, measured %s (%s)", f.knownText(), f.measuredText(), relative(f.measured, f.known))
	}
	return cal.backend + ": " + strings.Join(parts, "; ")
}

// calibration is what a calibration sweep's backend is known to do, beside
// what the sweep measured of it.
type calibration struct {
	backend string // what the backend does per request, in words
	facts   []calibrationFact
}

// calibrationFact is one known answer and its measurement at the knee.
type calibrationFact struct {
	name            string // "capacity", "cost", ...
	unit            string // "RPS", ...
	known, measured float64
	decimals        int
	// measuredAs overrides how the measurement reads (a censored knee).
	measuredAs string
}

func (f calibrationFact) knownText() string {
	return fmt.Sprintf("%s %s %s", f.name, fmtNum(f.known, f.decimals), f.unit)
}

func (f calibrationFact) measuredText() string {
	if f.measuredAs != "" {
		return f.measuredAs
	}
	return fmt.Sprintf("%s %s", fmtNum(f.measured, f.decimals), f.unit)
}

// calibrationOf reads a calibration sweep: the backend's note in the
// metadata gives its cost per request, its core assignment how many CPUs
// serve it, and the one configuration's knee what was measured.
func calibrationOf(meta dataset.Metadata, summary []dataset.KneeRow) (calibration, bool) {
	cost, ok := backend.CostFromNotes(meta.Notes)
	if !ok || len(summary) != 1 {
		return calibration{}, false
	}
	k := summary[0]
	var cal calibration
	var does []string
	if cost.CPU > 0 {
		cpus, err := procstat.ParseCPUList(meta.CoreAssignment["backend"])
		if err != nil || len(cpus) == 0 {
			return calibration{}, false
		}
		does = append(does, fmt.Sprintf("burning %s of CPU per request on %s", cost.CPU, count(len(cpus), "CPU")))
		cal.facts = append(cal.facts,
			calibrationFact{name: "capacity", unit: "RPS", known: float64(len(cpus)) / cost.CPU.Seconds(),
				measured: float64(k.KneeRPS), measuredAs: "knee " + kneeText(k) + " RPS"},
			calibrationFact{name: "cost", unit: "cores per 1k RPS", known: 1000 * cost.CPU.Seconds(),
				measured: k.CoresPer1kAtKnee, decimals: 2})
	}
	if cost.Sleep > 0 {
		does = append(does, fmt.Sprintf("sleeping %s per request", cost.Sleep))
		known := float64(cost.Sleep.Microseconds()) / 1000
		cal.facts = append(cal.facts,
			calibrationFact{name: "latency", unit: "ms", known: known, measured: k.P50MsAtKnee, decimals: 1,
				measuredAs: fmt.Sprintf("p50 %s ms at the knee", fmtNum(k.P50MsAtKnee, 1))},
			calibrationFact{name: "latency", unit: "ms", known: known, measured: k.P99MsAtKnee, decimals: 1,
				measuredAs: fmt.Sprintf("p99 %s ms at the knee", fmtNum(k.P99MsAtKnee, 1))})
	}
	cal.backend = "a backend " + strings.Join(does, " and ")
	return cal, true
}

func relative(measured, known float64) string {
	return fmt.Sprintf("%+.1f%%", 100*(measured-known)/known)
}

// count is "1 round", "3 rounds".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
