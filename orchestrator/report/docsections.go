package report

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
)

// The renderers of the generated sections other than a sweep's headline
// (sectionKinds): each reads only the committed files it is given, so the
// figures a reference doc quotes are the datasets' own.

// datasetIndex is a table of sweeps: when, where and how each was
// measured, and the command and commit that made it.
func datasetIndex(dir string, datasets []string) ([]byte, error) {
	var b bytes.Buffer
	writeTableHeader(&b, []string{"Dataset", "Finished", "Where", "Configurations", "Rounds x window", "Commit", "Command"})
	for _, d := range datasets {
		meta, err := dataset.ReadMetadata(filepath.Join(dir, d, dataset.MetadataFile))
		if err != nil {
			return nil, err
		}
		finished := "not finished"
		if !meta.FinishedAt.IsZero() {
			finished = meta.FinishedAt.UTC().Format("2006-01-02")
		}
		writeTableRow(&b, []string{
			fmt.Sprintf("[`%s`](%s)", d, d),
			finished,
			whereText(meta),
			configurationsText(meta),
			fmt.Sprintf("%d x %s", meta.Plan.Rounds, meta.Plan.Measure),
			shortCommit(meta.Versions.WafsweepCommit),
			"`" + strings.Join(meta.CommandLine, " ") + "`",
		})
	}
	return b.Bytes(), nil
}

// whereText is "local, 2 x AMD EPYC, proxy on CPU 1".
func whereText(meta dataset.Metadata) string {
	s := fmt.Sprintf("%s, %d x %s", meta.Target, meta.Cores, orUnknown(meta.CPUModel))
	if cpus := meta.CoreAssignment["proxy"]; cpus != "" {
		s += ", proxy on CPU " + cpus
	}
	return s
}

// configurationsText is "envoy, waf x full-crs x get, json_1k".
func configurationsText(meta dataset.Metadata) string {
	parts := []string{strings.Join(meta.Plan.Flavors, ", ")}
	if len(meta.Plan.Tiers) > 0 {
		parts = append(parts, strings.Join(meta.Plan.Tiers, ", "))
	}
	s := strings.Join(append(parts, strings.Join(meta.Plan.Shapes, ", ")), " x ")
	if t := meta.Plan.Transport(); !t.IsDefault() {
		s += "; over " + t.Name()
	}
	if env := meta.Plan.EnvoyEnv; len(env) > 0 {
		s += "; Envoy with " + strings.Join(env, " ")
	}
	return s
}

func shortCommit(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return orUnknown(c)
}

// groundTruthTable sets each calibration sweep's known answers beside
// what it measured.
func groundTruthTable(dir string, datasets []string) ([]byte, error) {
	var b bytes.Buffer
	writeTableHeader(&b, []string{"Dataset", "Known", "Measured", "Difference"})
	for _, d := range datasets {
		sw, err := dataset.ReadSweep(filepath.Join(dir, d))
		if err != nil {
			return nil, err
		}
		cal, ok := calibrationOf(sw.Meta, summaryKnees(sw.Knees))
		if !ok {
			return nil, fmt.Errorf("%s is not a calibration sweep (a direct sweep of one calibration backend)", d)
		}
		for _, f := range cal.facts {
			writeTableRow(&b, []string{"`" + shownPath(d) + "`", f.knownText(), f.measuredText(), relative(f.measured, f.known)})
		}
	}
	return b.Bytes(), nil
}

// memoryTable is each configuration's knee with the proxy's RSS there and
// its highest RSS over the search.
func memoryTable(dir string, datasets []string) ([]byte, error) {
	var b bytes.Buffer
	writeTableHeader(&b, []string{"Dataset", "Config", "Knee RPS", "RSS at the knee (MB)", "Peak RSS of the search (MB)"})
	var shown []dataset.KneeRow
	for _, d := range datasets {
		sw, err := dataset.ReadSweep(filepath.Join(dir, d))
		if err != nil {
			return nil, err
		}
		for _, k := range sortedSummary(sw) {
			writeTableRow(&b, []string{"`" + shownPath(d) + "`", "`" + k.ConfigID + "`", kneeText(k), fmtNum(k.RSSMBAtKnee, 1), fmtNum(k.RSSPeakMB, 1)})
			shown = append(shown, k)
		}
	}
	writeTableEnd(&b, shown)
	return b.Bytes(), nil
}

// sloTable sets sweeps side by side on what a planner reads: per
// configuration the capacity knee, the highest rate within each p99
// objective (with the planner's marks and their notes), and the RSS at the
// knee, with what each sweep gave Envoy's environment (the sweeps compared
// usually differ in nothing else).
func sloTable(dir string, datasets []string) ([]byte, error) {
	type sweepRows struct {
		name    string
		meta    dataset.Metadata
		summary []dataset.KneeRow
		slo     []dataset.SLOKneeRow
	}
	var sweeps []sweepRows
	var objectives []float64
	for _, d := range datasets {
		sw, err := dataset.ReadSweep(filepath.Join(dir, d))
		if err != nil {
			return nil, err
		}
		summary := sortedSummary(sw)
		slo := aggregateSLORows(sw.SLOKnees)
		for _, o := range sloObjectives(slo) {
			if !slices.Contains(objectives, o) {
				objectives = append(objectives, o)
			}
		}
		sweeps = append(sweeps, sweepRows{shownPath(d), sw.Meta, summary, slo})
	}
	slices.Sort(objectives)
	cols := []string{"Dataset", "Envoy's environment", "Config", "Knee RPS"}
	for _, o := range objectives {
		cols = append(cols, "p99 <= "+fmtNum(o, 0)+" ms: RPS")
	}
	var b bytes.Buffer
	writeTableHeader(&b, append(cols, "RSS at the knee (MB)"))
	var shown []dataset.KneeRow
	var shownSLO []dataset.SLOKneeRow
	for _, sw := range sweeps {
		env := "default"
		if len(sw.meta.Plan.EnvoyEnv) > 0 {
			env = strings.Join(sw.meta.Plan.EnvoyEnv, " ")
		}
		for _, k := range sw.summary {
			row := []string{"`" + sw.name + "`", env, "`" + k.ConfigID + "`", kneeText(k)}
			for _, o := range objectives {
				r, ok := findSLORow(sw.slo, k.ConfigID, o)
				switch {
				case !ok:
					row = append(row, "n/a")
				case r.KneeRPS == 0:
					row = append(row, "< floor")
				default:
					row = append(row, sloRateText(r, censoredAbove(sw.summary, k.ConfigID)))
					shownSLO = append(shownSLO, r)
				}
			}
			writeTableRow(&b, append(row, fmtNum(k.RSSMBAtKnee, 1)))
			shown = append(shown, k)
		}
	}
	writeTableEnd(&b, shown)
	for _, note := range sloMarkNotes(shownSLO) {
		b.WriteString("\n" + note + "\n")
	}
	return b.Bytes(), nil
}

// moduleCostTable renders results/bench/module.csv (wafsweep module-cost).
func moduleCostTable(dir string, datasets []string) ([]byte, error) {
	var b bytes.Buffer
	writeTableHeader(&b, []string{"Configuration", "Rate (RPS)", "Rounds", "Proxy CPU per request (µs)", "Over vanilla Envoy (µs)", "Engine alone (µs)", "Gap (µs)"})
	for _, d := range datasets {
		rows, err := dataset.ReadRecords(filepath.Join(dir, d), "flavor", "tier", "rate_rps", "rounds", "proxy_us_per_req", "proxy_us_min",
			"proxy_us_max", "over_envoy_us", "over_envoy_us_min", "over_envoy_us_max", "engine_us_per_req", "gap_us")
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			config := r["flavor"]
			if r["tier"] != "none" {
				config += ", " + r["tier"]
			}
			writeTableRow(&b, []string{config, r["rate_rps"], r["rounds"],
				spreadText(r["proxy_us_per_req"], r["proxy_us_min"], r["proxy_us_max"]),
				spreadText(r["over_envoy_us"], r["over_envoy_us_min"], r["over_envoy_us_max"]),
				numberText(r["engine_us_per_req"], 1), numberText(r["gap_us"], 0)})
		}
	}
	return b.Bytes(), nil
}

// engineTable renders make bench's engine CSVs: CPU per request of each
// engine flavor per shape, and the stock engine's ratio to each other
// flavor. A second CSV (the build without Hyperscan) adds its ratios.
func engineTable(dir string, datasets []string) ([]byte, error) {
	var tables []engineCosts
	for _, d := range datasets {
		t, err := readEngineCosts(filepath.Join(dir, d))
		if err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	first := tables[0]
	var b bytes.Buffer
	header := []string{"CPU per request (`" + filepath.Base(datasets[0]) + "`)"}
	for _, s := range first.shapes {
		header = append(header, first.shapeLabel[s])
	}
	writeTableHeader(&b, header)
	for _, f := range first.flavors {
		row := []string{f}
		for _, s := range first.shapes {
			row = append(row, millis(first.ns[s][f]))
		}
		writeTableRow(&b, row)
	}
	for i, t := range tables {
		for _, base := range ratioBases {
			if !slices.Contains(t.flavors, base) {
				continue
			}
			for _, f := range t.flavors {
				if slices.Contains(ratioBases, f) && slices.Index(ratioBases, f) <= slices.Index(ratioBases, base) {
					continue
				}
				row := []string{fmt.Sprintf("ratio %s / %s (`%s`)", base, f, filepath.Base(datasets[i]))}
				for _, s := range first.shapes {
					row = append(row, ratioText(t.ns[s][base], t.ns[s][f]))
				}
				writeTableRow(&b, row)
			}
		}
	}
	return b.Bytes(), nil
}

// ratioBases are the flavors every other one is compared with: stock
// Coraza, and stock Coraza with its own @rx prefilter (upstream's best).
var ratioBases = []string{"stock", "stock-rxpf"}

// engineCosts is one engine CSV: median CPU nanoseconds per shape and
// flavor, in the order the CSV lists them.
type engineCosts struct {
	shapes, flavors []string
	shapeLabel      map[string]string
	ns              map[string]map[string]float64
}

func readEngineCosts(path string) (engineCosts, error) {
	rows, err := dataset.ReadRecords(path, "shape", "bytes", "fields", "flavor", "cpu_ns_per_req")
	if err != nil {
		return engineCosts{}, err
	}
	t := engineCosts{shapeLabel: map[string]string{}, ns: map[string]map[string]float64{}}
	for _, r := range rows {
		shape, flavor := r["shape"], r["flavor"]
		ns, err := strconv.ParseFloat(r["cpu_ns_per_req"], 64)
		if err != nil {
			return engineCosts{}, fmt.Errorf("%s: %s %s: cpu_ns_per_req %q", path, shape, flavor, r["cpu_ns_per_req"])
		}
		if t.ns[shape] == nil {
			t.shapes = append(t.shapes, shape)
			t.ns[shape] = map[string]float64{}
			t.shapeLabel[shape] = shape
			if fields := r["fields"]; fields != "" && fields != "0" {
				t.shapeLabel[shape] = fmt.Sprintf("%s (%s fields)", shape, fields)
			}
		}
		if !slices.Contains(t.flavors, flavor) {
			t.flavors = append(t.flavors, flavor)
		}
		t.ns[shape][flavor] = ns
	}
	if len(t.shapes) == 0 {
		return engineCosts{}, fmt.Errorf("%s: no rows", path)
	}
	return t, nil
}

// millis prints nanoseconds as milliseconds with three significant digits.
func millis(ns float64) string {
	if ns == 0 || math.IsNaN(ns) {
		return "n/a"
	}
	return strconv.FormatFloat(ns/1e6, 'g', 3, 64) + " ms"
}

func ratioText(a, b float64) string {
	if a == 0 || b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1fx", a/b)
}

// soakSummary quotes a soak's summary.txt as make soak wrote it, with the
// command and commit of its metadata.txt.
func soakSummary(dir, shownDir string) ([]byte, error) {
	meta, err := os.ReadFile(filepath.Join(dir, "metadata.txt"))
	if err != nil {
		return nil, err
	}
	summary, err := os.ReadFile(filepath.Join(dir, "summary.txt"))
	if err != nil {
		return nil, err
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(meta), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			fields[k] = v
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "**`%s`** (commit %s, started %s, %s): `%s`\n\n", shownDir, shortCommit(fields["commit"]),
		orUnknown(fields["started"]), orUnknown(fields["cpus"]), orUnknown(fields["command"]))
	writeCode(&b, "text", strings.TrimRight(string(summary), "\n"))
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// shownPath is how a table names a dataset: its path without the climb out
// of the document's directory ("results/x" for "../../results/x").
func shownPath(p string) string {
	for strings.HasPrefix(p, "../") {
		p = p[len("../"):]
	}
	return p
}

// spreadText is "442 (381-454)", or the median alone without a spread.
func spreadText(median, lo, hi string) string {
	m := numberText(median, 0)
	if lo == "" || hi == "" || m == "" {
		return m
	}
	from, to := numberText(lo, 0), numberText(hi, 0)
	if strings.HasPrefix(from, "-") {
		return fmt.Sprintf("%s (%s to %s)", m, from, to) // "-3-5" would read as a subtraction
	}
	return fmt.Sprintf("%s (%s-%s)", m, from, to)
}

// numberText rounds a CSV number; an empty cell stays empty.
func numberText(s string, decimals int) string {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return fmtNum(v, decimals)
}
