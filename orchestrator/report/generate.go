package report

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// plot is one SVG file under plots/.
type plot struct {
	file, title string
	svg         []byte
}

// panel groups the plots of one tier x shape.
type panel struct {
	tier, shape string
	plots       []plot
}

// Generate writes dir/plots/*.svg, dir/report.md and dir/report.html (the
// same report as one self-contained page, plots inline) from the steps and
// what they derive (dataset.Derive, which the sweep has written beside them).
//
// Plots, per tier x shape (flavors without a WAF are drawn in every tier as
// baselines): served (2xx responses per second) vs target RPS, p50/p99 vs
// target, cores per 1k RPS vs target, one series per flavor, each value
// the median over valid runs at that target, knees marked. Per flavor: a
// heatmap of knees (tier x shape) on a color scale shared by all flavors.
// Knees come from the aggregate rows (round "all") when present, else from
// the round rows.
func Generate(dir string, steps []dataset.StepRow, derived dataset.Derived, meta dataset.Metadata) error {
	knees := derived.Knees
	plotsDir := filepath.Join(dir, "plots")
	if err := os.MkdirAll(plotsDir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	summary := summaryKnees(knees)
	flavors := flavorOrder(steps, summary)
	panels := panelPlots(steps, summary, flavors)
	heatmaps := heatmapPlots(summary, flavors)
	if err := writePlotFiles(plotsDir, allPlots(panels, heatmaps)); err != nil {
		return err
	}
	members, err := dataset.ReadMembers(filepath.Join(dir, dataset.MembersFile))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	md := renderMarkdown(meta, steps, knees, summary, derived.SLOKnees, members, panels, heatmaps)
	if err := os.WriteFile(filepath.Join(dir, "report.md"), md, 0o644); err != nil {
		return fmt.Errorf("report: write report.md: %w", err)
	}
	page, err := renderHTML(reportTitle(meta), md, allPlots(panels, heatmaps))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.html"), page, 0o644); err != nil {
		return fmt.Errorf("report: write report.html: %w", err)
	}
	return nil
}

// Regenerate draws a sweep directory's plots and reports again from the
// datasets in it, as Generate did when the sweep wrote them: after a change
// to the report, or for a dataset copied from elsewhere.
func Regenerate(dir string) error {
	sw, err := dataset.ReadSweep(dir)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return Generate(dir, sw.Steps, sw.Derived, sw.Meta)
}

// writePlotFiles writes the plots and removes the other SVG files in plotsDir,
// which the report owns: a plot an earlier version drew under another name
// would otherwise outlive it, linked from nowhere.
func writePlotFiles(plotsDir string, plots []plot) error {
	written := map[string]bool{}
	for _, p := range plots {
		if err := os.WriteFile(filepath.Join(plotsDir, p.file), p.svg, 0o644); err != nil {
			return fmt.Errorf("report: write plot: %w", err)
		}
		written[p.file] = true
	}
	stale, err := filepath.Glob(filepath.Join(plotsDir, "*.svg"))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	for _, f := range stale {
		if !written[filepath.Base(f)] {
			if err := os.Remove(f); err != nil {
				return fmt.Errorf("report: remove stale plot: %w", err)
			}
		}
	}
	return nil
}

func allPlots(panels []panel, heatmaps []plot) []plot {
	out := slices.Clone(heatmaps)
	for _, p := range panels {
		out = append(out, p.plots...)
	}
	return out
}

// summaryKnees keeps one row per config: the aggregate if present, else the
// last round row.
func summaryKnees(knees []dataset.KneeRow) []dataset.KneeRow {
	var out []dataset.KneeRow
	index := map[string]int{}
	for _, k := range knees {
		i, seen := index[k.ConfigID]
		switch {
		case !seen:
			index[k.ConfigID] = len(out)
			out = append(out, k)
		case k.Round == dataset.AllRounds || out[i].Round != dataset.AllRounds:
			out[i] = k
		}
	}
	return out
}

// sortedSummary is a sweep's summary knees, one per config, in the order
// its tables list configurations.
func sortedSummary(sw dataset.Sweep) []dataset.KneeRow {
	summary := summaryKnees(sw.Knees)
	sortByConfig(summary, flavorOrder(sw.Steps, summary))
	return summary
}

// flavorOrder lists the flavors present, known ones in canonical order
// first, so colors and legends are stable across plots.
func flavorOrder(steps []dataset.StepRow, knees []dataset.KneeRow) []string {
	seen := map[string]bool{}
	for _, s := range steps {
		seen[s.Flavor] = true
	}
	for _, k := range knees {
		seen[k.Flavor] = true
	}
	return canonical(seen, plan.Flavors())
}

// canonical orders the names in set: those in known first, in known's order,
// then the rest alphabetically.
func canonical(set map[string]bool, known []string) []string {
	var out, rest []string
	for _, k := range known {
		if set[k] {
			out = append(out, k)
		}
	}
	for n := range set {
		if !slices.Contains(known, n) {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

func flavorColor(flavors []string, f string) string {
	return paletteColor(slices.Index(flavors, f))
}

// panelTiers are the WAF tiers measured; with none, the baselines alone form
// one "none" panel.
func panelTiers(steps []dataset.StepRow) []string {
	set := map[string]bool{}
	for _, s := range steps {
		if s.Tier != plan.TierNone {
			set[s.Tier] = true
		}
	}
	if len(set) == 0 && len(steps) > 0 {
		return []string{plan.TierNone}
	}
	return canonical(set, plan.Tiers())
}

func panelShapes(steps []dataset.StepRow) []string {
	set := map[string]bool{}
	for _, s := range steps {
		set[s.Shape] = true
	}
	return canonical(set, plan.Shapes())
}

func panelPlots(steps []dataset.StepRow, summary []dataset.KneeRow, flavors []string) []panel {
	var panels []panel
	for _, tier := range panelTiers(steps) {
		for _, shape := range panelShapes(steps) {
			rows := inPanel(steps, tier, shape)
			if len(rows) == 0 {
				continue
			}
			panels = append(panels, panel{tier: tier, shape: shape, plots: []plot{
				servedPlot(rows, summary, flavors, tier, shape),
				latencyPlot(rows, summary, flavors, tier, shape),
				coresPlot(rows, summary, flavors, tier, shape),
			}})
		}
	}
	return panels
}

// inPanel keeps the valid runs of a tier x shape, baselines included.
func inPanel(steps []dataset.StepRow, tier, shape string) []dataset.StepRow {
	var out []dataset.StepRow
	for _, s := range steps {
		if s.Shape == shape && (s.Tier == tier || s.Tier == plan.TierNone) && s.Verdict != dataset.VerdictInvalid {
			out = append(out, s)
		}
	}
	return out
}

// servedPlot draws what each configuration delivered (2xx responses per
// second of the window) against what it was offered. Not achieved_rps,
// which counts the calls the client gave up on: a proxy offered 1,000 RPS
// that answered 2 a second would show 20.
func servedPlot(rows []dataset.StepRow, summary []dataset.KneeRow, flavors []string, tier, shape string) plot {
	chart := servedChart(rows, summary, flavors, tier, shape)
	return plot{file: plotFile(servedPlotName, tier, shape), title: chart.Title, svg: chart.SVG()}
}

// servedPlotName names the served-rate plots' files.
const servedPlotName = "served"

func servedChart(rows []dataset.StepRow, summary []dataset.KneeRow, flavors []string, tier, shape string) LineChart {
	chart := LineChart{
		Title:  servedTitle(tier, shape),
		XLabel: "target RPS", YLabel: "served RPS (2xx responses)",
	}
	var targets []Point
	for _, t := range distinctTargets(rows) {
		targets = append(targets, Point{float64(t), float64(t)})
	}
	chart.Series = append(chart.Series, Series{Name: "target", Points: targets, Color: "#999999", Dashed: true})
	for _, f := range flavors {
		if pts := medianSeries(rows, f, dataset.StepRow.ServedRPS); pts != nil {
			chart.Series = append(chart.Series, Series{Name: f, Points: pts, Color: flavorColor(flavors, f)})
			chart.Markers = append(chart.Markers, kneeMarkers(summary, f, tier, shape, f)...)
		}
	}
	chart.AutoLog()
	return chart
}

func servedTitle(tier, shape string) string {
	return fmt.Sprintf("Served vs target RPS: %s, %s", tier, shape)
}

func latencyPlot(rows []dataset.StepRow, summary []dataset.KneeRow, flavors []string, tier, shape string) plot {
	chart := LineChart{
		Title:  fmt.Sprintf("Latency vs target RPS: %s, %s (solid p99, dashed p50)", tier, shape),
		XLabel: "target RPS", YLabel: "latency (ms)",
	}
	for _, f := range flavors {
		p99 := medianSeries(rows, f, func(s dataset.StepRow) float64 { return s.P99Ms })
		if p99 == nil {
			continue
		}
		p50 := medianSeries(rows, f, func(s dataset.StepRow) float64 { return s.P50Ms })
		color := flavorColor(flavors, f)
		chart.Series = append(chart.Series,
			Series{Name: f + " p99", Points: p99, Color: color},
			Series{Name: f + " p50", Points: p50, Color: color, Dashed: true})
		chart.Markers = append(chart.Markers, kneeMarkers(summary, f, tier, shape, f+" p99")...)
	}
	chart.AutoLog()
	return plot{file: plotFile("latency", tier, shape), title: chart.Title, svg: chart.SVG()}
}

func coresPlot(rows []dataset.StepRow, summary []dataset.KneeRow, flavors []string, tier, shape string) plot {
	chart := LineChart{
		Title:  fmt.Sprintf("Proxy cores per 1,000 RPS: %s, %s", tier, shape),
		XLabel: "target RPS", YLabel: "cores per 1k RPS",
	}
	for _, f := range flavors {
		if pts := medianSeries(rows, f, func(s dataset.StepRow) float64 { return s.CoresPer1k }); pts != nil {
			chart.Series = append(chart.Series, Series{Name: f, Points: pts, Color: flavorColor(flavors, f)})
			chart.Markers = append(chart.Markers, kneeMarkers(summary, f, tier, shape, f)...)
		}
	}
	chart.AutoLog()
	return plot{file: plotFile("cores", tier, shape), title: chart.Title, svg: chart.SVG()}
}

// medianSeries is a flavor's metric per target, the median over runs
// (rounds, confirmations); nil when the flavor has no run here.
func medianSeries(rows []dataset.StepRow, flavor string, metric func(dataset.StepRow) float64) []Point {
	byTarget := map[int][]float64{}
	for _, r := range rows {
		if r.Flavor == flavor {
			byTarget[r.TargetRPS] = append(byTarget[r.TargetRPS], metric(r))
		}
	}
	var pts []Point
	for _, t := range sortedKeys(byTarget) {
		pts = append(pts, Point{X: float64(t), Y: dataset.Median(byTarget[t])})
	}
	return pts
}

func distinctTargets(rows []dataset.StepRow) []int {
	set := map[int][]float64{}
	for _, r := range rows {
		set[r.TargetRPS] = nil
	}
	return sortedKeys(set)
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// kneeMarkers marks the knee of the flavor's config in a panel.
func kneeMarkers(summary []dataset.KneeRow, flavor, tier, shape, series string) []Marker {
	k, ok := findSummary(summary, flavor, tier, shape)
	if !ok || k.Invalid || k.KneeRPS <= 0 {
		return nil
	}
	return []Marker{{X: float64(k.KneeRPS), Label: flavor + " knee " + kneeText(k), Series: series}}
}

// findSummary finds the config of a flavor in a panel: its row for the tier,
// or its "none" row when it is a baseline without a WAF.
func findSummary(summary []dataset.KneeRow, flavor, tier, shape string) (dataset.KneeRow, bool) {
	for _, want := range []string{tier, plan.TierNone} {
		for _, k := range summary {
			if k.Flavor == flavor && k.Shape == shape && k.Tier == want {
				return k, true
			}
		}
	}
	return dataset.KneeRow{}, false
}

// kneeText shows a knee with its censoring bound: "3500", ">= 10000",
// "< 1000", or "< 50" when even the floor of a descent below the ladder
// failed.
func kneeText(k dataset.KneeRow) string {
	switch {
	case k.Invalid && k.BoundRPS > 0:
		return fmt.Sprintf(">= %d (invalid above)", k.BoundRPS)
	case k.Invalid:
		return "invalid"
	case k.Censored == dataset.CensoredAbove:
		return fmt.Sprintf(">= %d", cmp.Or(k.BoundRPS, k.KneeRPS)) + contestedSuffix(k)
	case k.Censored == dataset.CensoredBelow:
		if bound := cmp.Or(k.BoundRPS, k.LowestFailRPS); bound > 0 {
			return fmt.Sprintf("< %d", bound)
		}
		return "below ladder"
	}
	return fmt.Sprint(k.KneeRPS) + contestedSuffix(k)
}

// contestedKneeMark flags a capacity knee that a run of its round failed
// to serve at or below (dataset.KneeRow.ContestedByRPS).
const contestedKneeMark = "‡"

func contestedSuffix(k dataset.KneeRow) string {
	if k.Invalid || k.ContestedByRPS <= 0 {
		return ""
	}
	return " " + contestedKneeMark
}

// contestedKneeNote says what the mark means, with each marked knee of
// rows and its lowest contesting rate; "" when rows mark none. A table of
// rounds names the round, or its rows of one configuration would read
// alike.
func contestedKneeNote(rows []dataset.KneeRow) string {
	var named []string
	for _, k := range rows {
		if contestedSuffix(k) == "" {
			continue
		}
		which := fmt.Sprintf("`%s`", k.ConfigID)
		if k.Round != dataset.AllRounds {
			which += fmt.Sprintf(" round %d", k.Round)
		}
		named = append(named, fmt.Sprintf("%s at %d", which, k.ContestedByRPS))
	}
	if len(named) == 0 {
		return ""
	}
	return contestedKneeMark + " In one of its rounds, a run of an SLO search failed to serve a rate at or below this knee (the lowest, in RPS: " +
		strings.Join(named, ", ") + "; `contested_by_rps` in `knees.csv`): near its knee the configuration's throughput varies more " +
		"from run to run than the confirmation showed, so plan on the SLO knees."
}

// writeContestedKneeNote writes the note as a paragraph of a report,
// after a table of rows.
func writeContestedKneeNote(b *bytes.Buffer, rows []dataset.KneeRow) {
	if note := contestedKneeNote(rows); note != "" {
		b.WriteString(note + "\n\n")
	}
}

// writeTableEnd ends a generated doc section's table of rows with the
// note, when it marks a knee.
func writeTableEnd(b *bytes.Buffer, rows []dataset.KneeRow) {
	if note := contestedKneeNote(rows); note != "" {
		b.WriteString("\n" + note + "\n")
	}
}

// heatmapPlots draws one knee heatmap per flavor on a shared scale.
func heatmapPlots(summary []dataset.KneeRow, flavors []string) []plot {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, k := range summary {
		if !k.Invalid {
			lo, hi = math.Min(lo, float64(k.KneeRPS)), math.Max(hi, float64(k.KneeRPS))
		}
	}
	var plots []plot
	for _, f := range flavors {
		rows := filter(summary, func(k dataset.KneeRow) bool { return k.Flavor == f })
		if len(rows) == 0 {
			continue
		}
		h := kneeHeatmap(f, rows)
		h.ScaleMin, h.ScaleMax = lo, hi
		plots = append(plots, plot{file: plotFile("knee-heatmap", f), title: h.Title, svg: h.SVG()})
	}
	return plots
}

func kneeHeatmap(flavor string, rows []dataset.KneeRow) Heatmap {
	tiers, shapes := map[string]bool{}, map[string]bool{}
	for _, k := range rows {
		tiers[k.Tier], shapes[k.Shape] = true, true
	}
	h := Heatmap{
		Title:     "Knee RPS: " + flavor,
		RowLabels: canonical(tiers, append([]string{plan.TierNone}, plan.Tiers()...)),
		ColLabels: canonical(shapes, plan.Shapes()),
		Unit:      "RPS",
	}
	for _, tier := range h.RowLabels {
		values, texts := make([]float64, len(h.ColLabels)), make([]string, len(h.ColLabels))
		for c, shape := range h.ColLabels {
			values[c], texts[c] = math.NaN(), "not run"
			if i := slices.IndexFunc(rows, func(k dataset.KneeRow) bool { return k.Tier == tier && k.Shape == shape }); i >= 0 {
				texts[c] = kneeText(rows[i])
				if !rows[i].Invalid {
					values[c] = float64(rows[i].KneeRPS)
				}
			}
		}
		h.Values, h.Texts = append(h.Values, values), append(h.Texts, texts)
	}
	return h
}

func filter[T any](in []T, keep func(T) bool) []T {
	var out []T
	for _, v := range in {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

// plotFile builds a file name from parts, keeping [a-z0-9_-] only.
func plotFile(parts ...string) string {
	clean := make([]string, len(parts))
	for i, p := range parts {
		clean[i] = strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
				return r
			case r >= 'A' && r <= 'Z':
				return r + ('a' - 'A')
			}
			return '_'
		}, p)
	}
	return strings.Join(clean, "-") + ".svg"
}

// sortByConfig is used by tables: flavor canonical, then tier, then shape.
func sortByConfig(rows []dataset.KneeRow, flavors []string) {
	tiers := append([]string{plan.TierNone}, plan.Tiers()...)
	rank := func(list []string, v string) int {
		if i := slices.Index(list, v); i >= 0 {
			return i
		}
		return len(list)
	}
	slices.SortStableFunc(rows, func(a, b dataset.KneeRow) int {
		return cmp.Or(
			cmp.Compare(rank(flavors, a.Flavor), rank(flavors, b.Flavor)),
			cmp.Compare(rank(tiers, a.Tier), rank(tiers, b.Tier)),
			cmp.Compare(rank(plan.Shapes(), a.Shape), rank(plan.Shapes(), b.Shape)),
			cmp.Compare(a.Round, b.Round),
		)
	})
}
