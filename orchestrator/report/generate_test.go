package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/cpuprobe"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// simulatedSweep runs real knee searches (the notes' method) against proxies
// of known capacity and returns their steps.
func simulatedSweep(t *testing.T, capacities map[plan.Config]int, ladder []int) []dataset.StepRow {
	return simulatedSweepWith(t, capacities, ladder, notesOptions())
}

// notesOptions are the plan's knee options without the descent, as the
// simulated sweeps run them.
func notesOptions() knee.Options {
	p := plan.Default()
	p.FloorRPS = 0
	return p.KneeOptions()
}

func simulatedSweepWith(t *testing.T, capacities map[plan.Config]int, ladder []int, opts knee.Options) []dataset.StepRow {
	t.Helper()
	var rows []dataset.StepRow
	for _, cfg := range []plan.Config{
		{Flavor: "envoy", Tier: "none", Shape: "get"},
		{Flavor: "waf", Tier: "full-crs", Shape: "get"},
		{Flavor: "waf", Tier: "full-crs", Shape: "json_1k"},
	} {
		capacity, ok := capacities[cfg]
		if !ok {
			continue
		}
		s, err := knee.NewSearch(ladder, opts)
		if err != nil {
			t.Fatal(err)
		}
		for seq := 0; ; seq++ {
			rate, kind, done := s.Next()
			if done {
				break
			}
			st := knee.Step{Target: rate, Scheduled: int64(rate) * 20, Completed: int64(rate) * 20}
			achieved := float64(rate)
			if rate > capacity {
				st.Completed = int64(capacity) * 20
				achieved = float64(capacity)
			}
			if err := s.Record(st); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, dataset.StepRow{
				SweepID: "sw-test", ConfigID: cfg.ID(), Flavor: cfg.Flavor, Tier: cfg.Tier, Shape: cfg.Shape,
				Seq: seq, Kind: string(kind), TargetRPS: rate, WindowS: 20, Scheduled: st.Scheduled, Completed: st.Completed,
				AchievedRPS: achieved, P50Ms: 0.3, P99Ms: 1 + float64(rate)/1000, CoresPer1k: 0.1,
				ProxyRSSPeakMB: 120, Verdict: dataset.VerdictOf(st),
			})
		}
	}
	return rows
}

func testMeta() dataset.Metadata {
	return dataset.Metadata{
		SweepID:     "sw-test",
		StartedAt:   time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		CommandLine: []string{"wafsweep", "run", "--plan", "plan.json"},
		Plan:        plan.Default(),
		Versions:    dataset.Versions{Envoy: "1.40.0", Coraza: "v3.8.1", CRS: "v4.25.0", ModuleAccelerated: "sha256:0123", ModuleAcceleratedEngine: "hyperscan (libhs.so.5)"},
		CPUModel:    "Test CPU <x86>", Cores: 2, Target: dataset.TargetLocal,
		CoreAssignment: map[string]string{"proxy": "0", "loadgen": "1"},
		CPUProbes: []cpuprobe.Probe{
			{At: time.Date(2025, 1, 2, 3, 4, 0, 0, time.UTC), Rate: 20000, Spread: 0.04},
			{At: time.Date(2025, 1, 3, 3, 4, 0, 0, time.UTC), Rate: 17000, Spread: 0.31},
		},
	}
}

// envoyAndWAFSweep simulates vanilla Envoy and full CRS on two shapes with
// the given capacities.
func envoyAndWAFSweep(t *testing.T, ladder []int, envoy, wafGet, wafJSON int) []dataset.StepRow {
	return simulatedSweep(t, map[plan.Config]int{
		{Flavor: "envoy", Tier: "none", Shape: "get"}:       envoy,
		{Flavor: "waf", Tier: "full-crs", Shape: "get"}:     wafGet,
		{Flavor: "waf", Tier: "full-crs", Shape: "json_1k"}: wafJSON,
	}, ladder)
}

func TestGenerate(t *testing.T) {
	ladder := []int{1000, 2000, 3000, 4000}
	steps := envoyAndWAFSweep(t, ladder, 9000, 2600, 500)
	knees, err := dataset.BuildKnees(steps, ladder, notesOptions())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	meta := testMeta()
	meta.Plan.FloorRPS = 0 // the notes' method, as simulated
	// A plot an earlier version drew under a name this one does not use.
	stale := filepath.Join(dir, "plots", "achieved-full-crs-get.svg")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("<svg/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Generate(dir, steps, withSLOKnees(t, steps, knees, meta), meta); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	report := string(md)
	if strings.Contains(report, "Extension below the ladder") {
		t.Error("report.md describes a descent the sweep did not make")
	}
	for _, want := range []string{
		"# wafsweep report: sw-test",
		"| `envoy/none/get` | >= 4000 | above | no | none | 1.00 |",
		"| `waf/full-crs/get` | 2600 | none | yes | 2650 | 0.65 |",
		"| `waf/full-crs/json_1k` | < 1000 | below | no | 1000 | n/a |",
		"The knee is the highest passing rate whose next tested higher rate fails",
		"## Cost model",
		"| Config | Idle cores | Cores per 1k RPS | Fit error (cores) | Steps | Rates fitted | Cores at the knee |",
		"wafsweep run --plan plan.json",
		"| Coraza | v3.8.1 |",
		"| WAF module, accelerated build | sha256:0123 |",
		"| Accelerated build's engine | hyperscan (libhs.so.5) |",
		"- CPU: Test CPU &lt;x86&gt;, 2 cores",
		"- Cores for loadgen: 1",
		"- Proxy's CPU probed before the sweep and at each resume (units/s of package cpuprobe's work on CPU 0): 20000, slices 4% apart, at 2025-01-02T03:04:00Z; 17000, slices 31% apart, at 2025-01-03T03:04:00Z (-15%)",
		`"ladder": [`,
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	wantPlots := []string{
		"knee-heatmap-envoy.svg", "knee-heatmap-waf.svg",
		"served-full-crs-get.svg", "latency-full-crs-get.svg", "cores-full-crs-get.svg",
		"served-full-crs-json_1k.svg", "latency-full-crs-json_1k.svg", "cores-full-crs-json_1k.svg",
	}
	linked := regexp.MustCompile(`!\[[^\]]*\]\(plots/([^)]+)\)`).FindAllStringSubmatch(report, -1)
	if len(linked) != len(wantPlots) {
		t.Errorf("report links %d plots, want %d", len(linked), len(wantPlots))
	}
	for _, m := range linked {
		data, err := os.ReadFile(filepath.Join(dir, "plots", m[1]))
		if err != nil {
			t.Errorf("linked plot: %v", err)
			continue
		}
		parseSVG(t, data)
	}
	for _, name := range wantPlots {
		if !strings.Contains(report, "(plots/"+name+")") {
			t.Errorf("report does not embed %s", name)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a plot the report no longer draws is still in plots/ (%v)", err)
	}
	if onDisk, _ := filepath.Glob(filepath.Join(dir, "plots", "*.svg")); len(onDisk) != len(wantPlots) {
		t.Errorf("plots/ holds %d plots, want the %d the report links", len(onDisk), len(wantPlots))
	}
	served, _ := os.ReadFile(filepath.Join(dir, "plots", "served-full-crs-get.svg"))
	p := parseSVG(t, served)
	for _, want := range []string{"envoy", "waf", "target", "waf knee 2600", "envoy knee >= 4000", "served RPS (2xx responses)"} {
		if !p.hasText(want) {
			t.Errorf("served plot lacks %q: %q", want, p.texts)
		}
	}
	heat, _ := os.ReadFile(filepath.Join(dir, "plots", "knee-heatmap-waf.svg"))
	if p := parseSVG(t, heat); !p.hasText("2600") || !p.hasText("< 1000") {
		t.Errorf("heatmap texts %q", p.texts)
	}
}

// An overloaded step ends many calls by the client's timeout: the served
// plot shows the responses, not the ended calls achieved_rps counts.
func TestServedPlotLeavesOutCallsWithoutResponse(t *testing.T) {
	rows := []dataset.StepRow{
		{Flavor: "waf", Tier: "full-crs", Shape: "json_10k", TargetRPS: 10, WindowS: 20, Completed: 200, AchievedRPS: 10},
		// reference-json_10k, round 0: 404 calls ended, 355 by timeout.
		{Flavor: "waf", Tier: "full-crs", Shape: "json_10k", TargetRPS: 1000, WindowS: 20, Completed: 404, SocketErrors: 355, AchievedRPS: 20.2},
	}
	chart := servedChart(rows, nil, []string{"waf"}, "full-crs", "json_10k")
	var waf []Point
	for _, s := range chart.Series {
		if s.Name == "waf" {
			waf = s.Points
		}
	}
	want := []Point{{10, 10}, {1000, 49.0 / 20}}
	if !slices.Equal(waf, want) {
		t.Errorf("waf series %v, want %v", waf, want)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	ladder := []int{1000, 2000}
	steps := simulatedSweep(t, map[plan.Config]int{
		{Flavor: "envoy", Tier: "none", Shape: "get"}:   5000,
		{Flavor: "waf", Tier: "full-crs", Shape: "get"}: 1500,
	}, ladder)
	knees, _ := dataset.BuildKnees(steps, ladder, notesOptions())
	a, b := t.TempDir(), t.TempDir()
	if err := Generate(a, steps, withSLOKnees(t, steps, knees, testMeta()), testMeta()); err != nil {
		t.Fatal(err)
	}
	if err := Generate(b, steps, withSLOKnees(t, steps, knees, testMeta()), testMeta()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.md", "report.html", "plots/latency-full-crs-get.svg", "plots/knee-heatmap-waf.svg"} {
		x, _ := os.ReadFile(filepath.Join(a, name))
		y, _ := os.ReadFile(filepath.Join(b, name))
		if len(x) == 0 || string(x) != string(y) {
			t.Errorf("%s differs between two runs (or is empty)", name)
		}
	}
}

func TestGenerateWithoutData(t *testing.T) {
	dir := t.TempDir()
	if err := Generate(dir, nil, dataset.Derived{}, dataset.Metadata{}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"> No knees were computed", "> No steps were recorded: there are no per-step plots.", "Sweep: unknown",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "plots")); len(entries) != 0 {
		t.Errorf("plots written without data: %v", entries)
	}
}

func TestGenerateKneesWithoutSteps(t *testing.T) {
	dir := t.TempDir()
	knees := []dataset.KneeRow{{ConfigID: "waf/full-crs/get", Flavor: "waf", Tier: "full-crs", Shape: "get",
		Round: dataset.AllRounds, KneeRPS: 3000, Censored: dataset.CensoredNone, Invalid: false}}
	if err := Generate(dir, nil, dataset.Derived{Knees: knees}, dataset.Metadata{}); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "| `waf/full-crs/get` | 3000 |") ||
		!strings.Contains(string(md), "No steps were recorded: there are no per-step plots") {
		t.Errorf("report.md:\n%s", md)
	}
}

func TestGenerateBelowTheLadder(t *testing.T) {
	ladder := []int{1000, 2000, 3000, 4000}
	meta := testMeta() // floor 50
	steps := simulatedSweepWith(t, map[plan.Config]int{
		{Flavor: "envoy", Tier: "none", Shape: "get"}:       9000,
		{Flavor: "waf", Tier: "full-crs", Shape: "get"}:     400, // found by the descent
		{Flavor: "waf", Tier: "full-crs", Shape: "json_1k"}: 30,  // below the floor
	}, ladder, meta.Plan.KneeOptions())
	dir, report := generated(t, steps, ladder, meta)
	for _, want := range []string{
		"| `envoy/none/get` | >= 4000 | above |",
		"| `waf/full-crs/get` | 395 | none | yes | 410 |", // capacity 400, bisected to 5%
		"| `waf/full-crs/json_1k` | < 50 | below | no | 50 |",
		"Extension below the ladder (floor 50 RPS)",
		`reported as "< 50"`,
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	heat, _ := os.ReadFile(filepath.Join(dir, "plots", "knee-heatmap-waf.svg"))
	if p := parseSVG(t, heat); !p.hasText("395") || !p.hasText("< 50") {
		t.Errorf("heatmap texts %q", p.texts)
	}
	heat, _ = os.ReadFile(filepath.Join(dir, "plots", "knee-heatmap-envoy.svg"))
	if p := parseSVG(t, heat); !p.hasText(">= 4000") {
		t.Errorf("envoy heatmap texts %q", p.texts)
	}
	// Without metadata the floor is read off the descend steps.
	if got := descentFloor(dataset.Metadata{}, steps); got != 50 {
		t.Errorf("descentFloor without metadata = %d, want 50", got)
	}
}

func TestKneeText(t *testing.T) {
	tests := []struct {
		row  dataset.KneeRow
		want string
	}{
		{dataset.KneeRow{KneeRPS: 3500, Censored: dataset.CensoredNone}, "3500"},
		{dataset.KneeRow{KneeRPS: 10000, Censored: dataset.CensoredAbove, BoundRPS: 10000}, ">= 10000"},
		{dataset.KneeRow{Censored: dataset.CensoredBelow, BoundRPS: 50, LowestFailRPS: 50}, "< 50"},
		{dataset.KneeRow{Censored: dataset.CensoredBelow, BoundRPS: 1000, LowestFailRPS: 1000}, "< 1000"},
		{dataset.KneeRow{Censored: dataset.CensoredBelow, LowestFailRPS: 1000}, "< 1000"}, // no bound: lowest fail
		{dataset.KneeRow{Censored: dataset.CensoredBelow}, "below ladder"},
		{dataset.KneeRow{Invalid: true, Censored: dataset.CensoredNone}, "invalid"},
		{dataset.KneeRow{KneeRPS: 1250, Censored: dataset.CensoredNone, ContestedByRPS: 940}, "1250 ‡"},
		{dataset.KneeRow{KneeRPS: 10000, Censored: dataset.CensoredAbove, BoundRPS: 10000, ContestedByRPS: 8750}, ">= 10000 ‡"},
		{dataset.KneeRow{Invalid: true, ContestedByRPS: 500}, "invalid"},
	}
	for _, tt := range tests {
		if got := kneeText(tt.row); got != tt.want {
			t.Errorf("kneeText(%+v) = %q, want %q", tt.row, got, tt.want)
		}
	}
}

// The note under a table names each marked knee and its lowest
// contesting rate, and is absent when no knee is marked.
func TestContestedKneeNote(t *testing.T) {
	plain := dataset.KneeRow{ConfigID: "envoy/none/get", KneeRPS: 10000, Censored: dataset.CensoredAbove, BoundRPS: 10000}
	contested := dataset.KneeRow{ConfigID: "waf/full-crs/get", Round: dataset.AllRounds, KneeRPS: 1250, ContestedByRPS: 940}
	if note := contestedKneeNote([]dataset.KneeRow{plain}); note != "" {
		t.Errorf("note without a marked knee: %q", note)
	}
	note := contestedKneeNote([]dataset.KneeRow{plain, contested})
	if !strings.HasPrefix(note, "‡ ") || !strings.Contains(note, "`waf/full-crs/get` at 940") || strings.Contains(note, "envoy/none/get") {
		t.Errorf("note %q: want the mark, the contested knee and its rate, and no other", note)
	}
	perRound := []dataset.KneeRow{contested, contested}
	perRound[0].Round, perRound[1].Round, perRound[1].ContestedByRPS = 0, 2, 1100
	if note := contestedKneeNote(perRound); !strings.Contains(note, "`waf/full-crs/get` round 0 at 940, `waf/full-crs/get` round 2 at 1100;") {
		t.Errorf("note %q: want each round's row named by its round", note)
	}
	var b bytes.Buffer
	writeTableEnd(&b, []dataset.KneeRow{contested})
	if got := b.String(); got != "\n"+note+"\n" {
		t.Errorf("a doc table's end %q, want the note as its own paragraph", got)
	}
}

// The report opens with the planner's table, from the SLO searches the
// steps carry, and a worked line that turns one row into instances.
func TestGenerateOpensWithThePlannersTable(t *testing.T) {
	ladder := []int{1000, 2000, 3000, 4000}
	steps := simulatedSweep(t, map[plan.Config]int{
		{Flavor: "waf", Tier: "full-crs", Shape: "get"}: 2600,
		{Flavor: "envoy", Tier: "none", Shape: "get"}:   5000, // above the ladder
	}, ladder)
	meta := testMeta()
	meta.Plan.FloorRPS = 0
	_, report := generated(t, steps, ladder, meta)
	// The first screen: the planner's table and the knee plot; then the
	// method; then the details.
	order := []string{"## Capacity at each p99 objective", "## Knees per tier and shape", "## Method", "## Knees\n", "## Plots", "## Reproduce"}
	at := -1
	for _, heading := range order {
		i := strings.Index(report, heading)
		if i < at {
			t.Fatalf("%q is missing or out of order (want %q):\n%s", heading, order, report)
		}
		at = i
	}
	for _, want := range []string{
		"| Config | p99 <= 10 ms: RPS | p99 <= 10 ms: cores/1k | p99 <= 50 ms: RPS |",
		// p99 at 2600 RPS is 3.6 ms in the simulation: every objective is
		// met at the capacity knee.
		"| `waf/full-crs/get` | 2600 | 0.100 | 2600 | 0.100 | 2600 | 0.100 |",
		// Met at a capacity knee censored by the ladder's top: a bound.
		"| `envoy/none/get` | >= 4000 |",
		"so 4 instances of 1 core(s) serve 10000 RPS at p99 <= 50 ms",
		"**Smoke run**",
		// The method says which rule took an objective as met at its bound.
		"only when every run made there met the objective (`slo_rule` every_run)",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// withSLOKnees pairs knees with the SLO knees the sweep derives from steps
// with meta's plan (dataset.Derive).
func withSLOKnees(t *testing.T, steps []dataset.StepRow, knees []dataset.KneeRow, meta dataset.Metadata) dataset.Derived {
	t.Helper()
	slo, err := dataset.BuildSLOKnees(steps, meta.Plan.Ladder, meta.Plan.KneeOptions(), dataset.ObjectivesOf(meta.Plan))
	if err != nil {
		t.Fatal(err)
	}
	return dataset.Derived{Knees: knees, SLOKnees: slo}
}

// generated builds the knees of steps with meta's plan and generates the
// report into a fresh directory, returning it and report.md.
func generated(t *testing.T, steps []dataset.StepRow, ladder []int, meta dataset.Metadata) (dir, report string) {
	t.Helper()
	knees, err := dataset.BuildKnees(steps, ladder, meta.Plan.KneeOptions())
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if err := Generate(dir, steps, withSLOKnees(t, steps, knees, meta), meta); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, string(md)
}

// A figure the last_run rule met at its bound although another run there
// was over the objective is marked, and the note under the table says
// what to plan on; a table without one carries neither.
func TestPlannerMarksContestedFigures(t *testing.T) {
	row := func(config string, slo float64, knee int, status string) dataset.SLOKneeRow {
		return dataset.SLOKneeRow{Round: dataset.AllRounds, ConfigID: config, Flavor: "nginx-modsecurity", SLOMs: slo,
			KneeRPS: knee, Status: status, CoresPer1k: 1}
	}
	const config = "nginx-modsecurity/full-crs/get"
	censored := []dataset.KneeRow{{Round: dataset.AllRounds, ConfigID: config, KneeRPS: 1000, Censored: dataset.CensoredAbove}}
	for _, tt := range []struct {
		name    string
		status  string
		summary []dataset.KneeRow
		cell    string
	}{
		{"contested", dataset.SLOContested, nil, "| 1000 † | 1.000 |"},
		{"every run met it", dataset.SLOAtBound, nil, "| 1000 | 1.000 |"},
		{"contested at the ladder's top", dataset.SLOContested, censored, "| >= 1000 † | 1.000 |"},
	} {
		var b bytes.Buffer
		slo := []dataset.SLOKneeRow{row(config, 10, 1000, tt.status), row(config, 50, 1000, dataset.SLOAtBound)}
		writePlannerTable(&b, "", testMeta(), slo, tt.summary)
		table := b.String()
		if !strings.Contains(table, "| `"+config+"` "+tt.cell) {
			t.Errorf("%s: the 10 ms cell is not %q:\n%s", tt.name, tt.cell, table)
		}
		if got, want := strings.Contains(table, contestedNote), tt.status == dataset.SLOContested; got != want {
			t.Errorf("%s: note under the table: %v, want %v:\n%s", tt.name, got, want, table)
		}
	}
}

func TestSLORateText(t *testing.T) {
	row := func(knee int, status string, rounds int, lo, hi float64) dataset.SLOKneeRow {
		return dataset.SLOKneeRow{KneeRPS: knee, Status: status, Rounds: rounds, KneeMinRPS: lo, KneeMaxRPS: hi}
	}
	for _, tt := range []struct {
		row      dataset.SLOKneeRow
		censored bool
		want     string
	}{
		{row(760, dataset.SLOSearched, 1, 760, 760), false, "760"},
		{row(1000, dataset.SLOAtBound, 3, 1000, 1000), false, "1000"},
		{row(10000, dataset.SLOAtBound, 3, 10000, 10000), true, ">= 10000"},
		{row(10000, dataset.SLOSearched, 1, 10000, 10000), true, "10000"}, // its own search: not a bound
		{row(1000, dataset.SLOContested, 1, 1000, 1000), false, "1000 †"},
		// nginx-modsecurity on GET, 10 ms: a median over rounds that one round's search disputes.
		{row(1000, dataset.SLOAtBound, 3, 760, 1000), false, "1000 (760-1000)"},
		{row(1000, dataset.SLOContested, 3, 760, 1000), false, "1000 (760-1000) †"},
	} {
		if got := sloRateText(tt.row, tt.censored); got != tt.want {
			t.Errorf("sloRateText(%+v, censored %v) = %q, want %q", tt.row, tt.censored, got, tt.want)
		}
	}
}
