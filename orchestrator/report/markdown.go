package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/cpuprobe"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// method states the knee definition (see package knee) for readers of the
// report.
const method = "Each step offers a constant target rate with Fortio (uniform spacing, catch-up, " +
	"connections warmed one at a time, enough connections that each sends about 50 requests) " +
	"in one run: a warm-up, then the measured window, then a short tail. Only what happened inside the window " +
	"counts: a step passes when the responses that arrived in it reach 99% of target x window with at most 0.1% " +
	"non-2xx responses or socket errors, and latency is timed from each request's intended send time " +
	"(corrected for coordinated omission; raw figures are in steps.csv). The proxy's CPU and request count " +
	"are sampled at the window's edges; a step whose measurement cannot be trusted (load generator over its CPU " +
	"budget, waiting for a CPU or late beside an SLO step's objective, CPU stolen by the hypervisor, proxy restart " +
	"or more CPU than its cpuset, proxy and load generator counts disagreeing, backend saturation, failed " +
	"pre-check) is invalid and retried. " +
	"The knee is the highest passing rate whose next tested higher rate fails, refined by bisection " +
	"to the plan's resolution (5%) and confirmed by a re-run; passing the top of the " +
	"ladder is reported as \">= top\" (censored above) and failing the bottom as \"< bottom\" (censored below)."

// writeSmokeWarning labels a sweep too short to plan on.
func writeSmokeWarning(b *bytes.Buffer, meta dataset.Metadata) {
	if meta.Plan.Rounds < 3 || meta.Plan.Measure < 20*time.Second {
		fmt.Fprintf(b, "> **Smoke run**: %d round(s) of %s windows. Plan on a sweep of at least 3 alternating rounds "+
			"of 20 s windows (`--profile reference`).\n\n", meta.Plan.Rounds, meta.Plan.Measure)
	}
}

func renderMarkdown(meta dataset.Metadata, steps []dataset.StepRow, knees, summary []dataset.KneeRow, slo []dataset.SLOKneeRow,
	members []dataset.MemberRow, panels []panel, heatmaps []plot) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", mdText(reportTitle(meta)))
	writeSmokeWarning(&b, meta)
	// The first screen answers the planner's question (rate and cores per
	// objective, then the knees at a glance); how they were measured comes
	// next, the details after it.
	writePlannerTable(&b, "## Capacity at each p99 objective", meta, slo, summary)
	writeKneePlots(&b, heatmaps)
	writeMethod(&b, summary, descentFloor(meta, steps), meta.Plan.SLORule)
	writeKneeTable(&b, steps, summary)
	writeCostSection(&b, steps, summary)
	writeAuditSection(&b, summary, flavorOrder(steps, summary))
	writeMembersSection(&b, steps, knees, summary, members)
	writeRoundTable(&b, knees)
	writePlots(&b, steps, panels)
	writeReproduce(&b, meta)
	return b.Bytes()
}

func reportTitle(meta dataset.Metadata) string {
	if meta.SweepID == "" {
		return "wafsweep report"
	}
	return "wafsweep report: " + meta.SweepID
}

// descentFloor is the floor of the descent below the ladder: the plan's, or,
// without one, the lowest descend step; 0 when the sweep did not descend.
func descentFloor(meta dataset.Metadata, steps []dataset.StepRow) int {
	if meta.Plan.FloorRPS > 0 {
		return meta.Plan.FloorRPS
	}
	floor := 0
	for _, s := range steps {
		if s.Kind == string(knee.KindDescend) && (floor == 0 || s.TargetRPS < floor) {
			floor = s.TargetRPS
		}
	}
	return floor
}

func writeMethod(b *bytes.Buffer, summary []dataset.KneeRow, floor int, rule plan.SLORule) {
	b.WriteString("## Method\n\n" + method + "\n\n")
	if floor > 0 {
		fmt.Fprintf(b, "Extension below the ladder (floor %d RPS): when the bottom of the ladder fails, the rate is halved "+
			"(rounded down to a multiple of 10 RPS, the last try exactly %d RPS) until a rate passes, then bisected and "+
			"confirmed as above. Below the ladder the 250 RPS part of the gap shrinks in proportion to the rate "+
			"(max(250 RPS x highest pass / bottom, 5%%)) and midpoints are multiples of 10 RPS. A configuration that "+
			"fails even the floor is reported as \"< %d\".\n\n", floor, floor, floor)
	}
	b.WriteString("With several rounds (alternating flavor order) the knee is the median over valid rounds. ")
	b.WriteString("\"x envoy\" divides the knee by vanilla Envoy's for the same shape; \"+p99\" is the p99 at the knee minus Envoy's p99 at the same target, when Envoy ran that target. ")
	b.WriteString("Cores per 1k RPS are idle-corrected proxy CPU seconds per 1,000 successful requests. ")
	b.WriteString("The highest rate within each p99 objective is searched for on its own (the SLO table above), never read off the rates the capacity search visited. ")
	b.WriteString(sloRuleText(rule) + "\n\n")
}

// sloRuleText says when an objective was taken as met at its bound.
func sloRuleText(rule plan.SLORule) string {
	if rule == plan.SLOLastRun {
		return "It equals its bound (the capacity knee, or a larger objective's rate) when the bounding search's last run there met " +
			"the objective (`slo_rule` last_run, the rule of sweeps made before every_run); " + contestedMark +
			" marks where another run there was over it."
	}
	return "It equals its bound (the capacity knee, or a larger objective's rate) only when every run made there met the " +
		"objective (`slo_rule` every_run); otherwise the search goes on below, and a rate where a run already failed the objective is not run again."
}

var kneeColumns = []string{
	"Config", "Knee RPS", "Censored", "Confirmed", "Lowest fail", "x envoy", "p50 ms", "p99 ms",
	"+p99 ms vs envoy", "Cores/1k RPS", "RSS MB at knee", "Peak RSS MB", "Rounds", "Median", "Min", "Max", "Stddev",
}

func writeKneeTable(b *bytes.Buffer, steps []dataset.StepRow, summary []dataset.KneeRow) {
	b.WriteString("## Knees\n\n")
	if len(summary) == 0 {
		b.WriteString("> No knees were computed: there is no knee table.\n\n")
		return
	}
	rows := slices.Clone(summary)
	sortByConfig(rows, flavorOrder(steps, rows))
	writeTableHeader(b, kneeColumns)
	for _, k := range rows {
		writeTableRow(b, kneeCells(k))
	}
	b.WriteString("\n")
	writeContestedKneeNote(b, rows)
	for _, k := range rows {
		if k.Invalid {
			fmt.Fprintf(b, "- `%s` is invalid: %s\n", k.ConfigID, mdText(strings.Join(k.Reasons, "; ")))
		}
	}
	b.WriteString("\n")
}

func kneeCells(k dataset.KneeRow) []string {
	return []string{
		"`" + k.ConfigID + "`", kneeText(k), k.Censored, yesNo(k.Confirmed), rateOrNone(k.LowestFailRPS),
		fmtNum(k.KneeVsEnvoy, 2), fmtNum(k.P50MsAtKnee, 3), fmtNum(k.P99MsAtKnee, 3),
		fmtNum(k.AddedP99MsVsEnvoy, 3), fmtNum(k.CoresPer1kAtKnee, 3), fmtNum(k.RSSMBAtKnee, 1), fmtNum(k.RSSPeakMB, 1),
		strconv.Itoa(k.Rounds),
		fmtNum(k.KneeMedianRPS, 0), fmtNum(k.KneeMinRPS, 0), fmtNum(k.KneeMaxRPS, 0), fmtNum(k.KneeStddevRPS, 0),
	}
}

// writeRoundTable lists each round's knee when there was more than one.
func writeRoundTable(b *bytes.Buffer, knees []dataset.KneeRow) {
	rounds := filter(knees, func(k dataset.KneeRow) bool { return k.Round != dataset.AllRounds })
	if !slices.ContainsFunc(rounds, func(k dataset.KneeRow) bool { return k.Round > 0 }) {
		return
	}
	sortByConfig(rounds, flavorOrder(nil, rounds))
	b.WriteString("### Knees per round\n\n")
	writeTableHeader(b, []string{"Config", "Round", "Knee RPS", "Confirmed", "Lowest fail", "p99 ms"})
	for _, k := range rounds {
		writeTableRow(b, []string{
			"`" + k.ConfigID + "`", strconv.Itoa(k.Round), kneeText(k), yesNo(k.Confirmed),
			rateOrNone(k.LowestFailRPS), fmtNum(k.P99MsAtKnee, 3),
		})
	}
	b.WriteString("\n")
	writeContestedKneeNote(b, rounds)
}

// writeKneePlots draws each flavor's knees per tier and shape.
func writeKneePlots(b *bytes.Buffer, heatmaps []plot) {
	if len(heatmaps) == 0 {
		return
	}
	b.WriteString("## Knees per tier and shape\n\n")
	for _, p := range heatmaps {
		writeImage(b, p)
	}
}

// writePlots draws each tier x shape's steps.
func writePlots(b *bytes.Buffer, steps []dataset.StepRow, panels []panel) {
	b.WriteString("## Plots\n\n")
	if len(steps) == 0 {
		b.WriteString("> No steps were recorded: there are no per-step plots.\n\n")
		return
	}
	for _, p := range panels {
		fmt.Fprintf(b, "### %s, %s\n\n", mdText(p.tier), mdText(p.shape))
		for _, pl := range p.plots {
			writeImage(b, pl)
		}
	}
}

func writeImage(b *bytes.Buffer, p plot) {
	fmt.Fprintf(b, "![%s](plots/%s)\n\n", mdText(p.title), p.file)
}

func writeReproduce(b *bytes.Buffer, meta dataset.Metadata) {
	b.WriteString("## Reproduce\n\n")
	fmt.Fprintf(b, "- Sweep: %s, target %s\n", orUnknown(meta.SweepID), orUnknown(meta.Target))
	fmt.Fprintf(b, "- Started %s, finished %s\n", fmtTime(meta.StartedAt), fmtTime(meta.FinishedAt))
	fmt.Fprintf(b, "- CPU: %s, %d cores\n", orUnknown(meta.CPUModel), meta.Cores)
	for _, role := range sortedStrings(meta.CoreAssignment) {
		fmt.Fprintf(b, "- Cores for %s: %s\n", mdText(role), mdText(meta.CoreAssignment[role]))
	}
	if line := probesLine(meta.CPUProbes); line != "" {
		fmt.Fprintf(b, "- %s\n", line)
	}
	if env := meta.Plan.EnvoyEnv; len(env) > 0 {
		fmt.Fprintf(b, "- Envoy's environment: %s\n", mdText(strings.Join(env, " ")))
	}
	if t := meta.Plan.Transport(); !t.IsDefault() {
		fmt.Fprintf(b, "- Load generator to proxy: %s (the proxy to the backend: HTTP/1.1 in clear)\n", t.Name())
	}
	v := meta.Versions
	b.WriteString("\n")
	writeTableHeader(b, []string{"Component", "Version"})
	rows := [][2]string{{"Envoy", v.Envoy}, {"WAF module", v.Module}}
	if v.ModuleAccelerated != "" {
		rows = append(rows, [2]string{"WAF module, accelerated build", v.ModuleAccelerated})
	}
	if v.ModuleAcceleratedEngine != "" { // recorded since 2026-12-06
		rows = append(rows, [2]string{"Accelerated build's engine", v.ModuleAcceleratedEngine})
	}
	if v.ModuleNoop != "" {
		rows = append(rows, [2]string{"No-op module", v.ModuleNoop})
	}
	rows = append(rows, [][2]string{{"Coraza", v.Coraza}, {"CRS", v.CRS}, {"Go", v.Go}, {"wafsweep commit", v.WafsweepCommit}}...)
	for _, row := range rows {
		writeTableRow(b, []string{row[0], orUnknown(row[1])})
	}
	b.WriteString("\nCommand line:\n\n")
	writeCode(b, "sh", strings.Join(meta.CommandLine, " "))
	if planJSON, err := json.MarshalIndent(meta.Plan, "", "  "); err == nil {
		b.WriteString("Plan:\n\n")
		writeCode(b, "json", string(planJSON))
	}
	if len(meta.Notes) > 0 {
		b.WriteString("Notes:\n\n")
		for _, n := range meta.Notes {
			fmt.Fprintf(b, "- %s\n", mdText(n))
		}
		b.WriteString("\n")
	}
}

// probesLine lists the probes of the proxy's CPU, each after the first
// with its speed relative to the first ("" when there are none).
func probesLine(probes []cpuprobe.Probe) string {
	if len(probes) == 0 {
		return ""
	}
	parts := make([]string, len(probes))
	for i, p := range probes {
		parts[i] = fmt.Sprintf("%.0f, slices %.0f%% apart, at %s", p.Rate, 100*p.Spread, fmtTime(p.At))
		if i > 0 {
			parts[i] += fmt.Sprintf(" (%+.0f%%)", -100*p.Slower(probes[0]))
		}
	}
	return fmt.Sprintf("Proxy's CPU probed before the sweep and at each resume (units/s of package cpuprobe's work on CPU %d): %s",
		probes[0].CPU, strings.Join(parts, "; "))
}

// writeCode fences text with more backticks than it contains in a row.
func writeCode(b *bytes.Buffer, lang, text string) {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	fmt.Fprintf(b, "%s%s\n%s\n%s\n\n", fence, lang, text, fence)
}

func writeTableHeader(b *bytes.Buffer, cols []string) {
	writeTableRow(b, cols)
	seps := make([]string, len(cols))
	for i := range seps {
		seps[i] = "---"
	}
	writeTableRow(b, seps)
}

func writeTableRow(b *bytes.Buffer, cells []string) {
	escaped := make([]string, len(cells))
	for i, c := range cells {
		escaped[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	fmt.Fprintf(b, "| %s |\n", strings.Join(escaped, " | "))
}

// mdText keeps free text on one line and stops it from opening markup.
func mdText(s string) string {
	return mdReplacer.Replace(s)
}

var mdReplacer = strings.NewReplacer("\r", " ", "\n", " ", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`, "`", "'")

// fmtNum prints v with the given decimals (-1: as short as exact), "n/a"
// for NaN.
func fmtNum(v float64, decimals int) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	text := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.TrimLeft(text, "-0.") == "" {
		return strings.TrimPrefix(text, "-") // -0.2 rounds to 0, not -0
	}
	return text
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}

// rateOrNone prints a rate, 0 meaning there is none.
func rateOrNone(rps int) string {
	if rps <= 0 {
		return "none"
	}
	return strconv.Itoa(rps)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return mdText(s)
}

func sortedStrings(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
