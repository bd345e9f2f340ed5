package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/internal/repofiles"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// docsWithFigures are the documents that must quote their figures through
// generated sections: a test that found none in them would pass vacuously.
var docsWithFigures = []string{"README.md", "results/README.md", "filter/accel/README.md"}

// Every figure a committed document quotes from a dataset through a
// generated section is what that dataset says: each section is rendered
// again from the committed files it names, and must come out unchanged.
func TestDocFiguresComeFromTheDatasets(t *testing.T) {
	repo, err := envoyproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := repofiles.Committed(".")
	if err != nil {
		t.Fatal(err)
	}
	var withSections []string
	for _, f := range files {
		if filepath.Ext(f) != ".md" {
			continue
		}
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, f)
		if !sectionBegin.Match(doc) {
			continue
		}
		withSections = append(withSections, rel)
		fresh, err := RegenerateSections(doc, filepath.Dir(f))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if !bytes.Equal(doc, fresh) {
			t.Errorf("%s: its generated sections differ from the datasets they name: run make readme-figures", rel)
		}
	}
	for _, doc := range docsWithFigures {
		if !slices.Contains(withSections, doc) {
			t.Errorf("%s has no generated section", doc)
		}
	}
}

// results/README.md's index lists every committed sweep, so none lands
// without its command and commit on that page.
func TestEveryCommittedSweepIsIndexed(t *testing.T) {
	repo, err := envoyproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(repo, "results", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var indexed []string
	for _, m := range sectionBegin.FindAllSubmatch(doc, -1) {
		if string(m[2]) == "datasets" {
			indexed = append(indexed, strings.Fields(string(m[3]))...)
		}
	}
	dirs, err := repofiles.CommittedDirs("results", dataset.MetadataFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no committed sweep found")
	}
	for _, d := range dirs {
		rel, _ := filepath.Rel(filepath.Join(repo, "results"), d)
		if !slices.Contains(indexed, rel) {
			t.Errorf("results/%s is not in results/README.md's dataset index", rel)
		}
	}
}

func TestRegenerateSectionsRefusesBrokenMarkers(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"<!-- BEGIN generated: t (make readme-figures: results/x) -->\nno end\n", `has no "<!-- END generated: t -->" line`},
		{"<!-- BEGIN generated: t (make readme-figures: ) -->\n<!-- END generated: t -->", "names no dataset"},
		{"<!-- BEGIN generated: t (make readme-figures: nowhere) -->\n<!-- END generated: t -->", "nowhere/metadata.json"},
		{"<!-- BEGIN generated: t (make readme-figures pie-chart: x) -->\n<!-- END generated: t -->", `unknown kind "pie-chart"`},
		{"<!-- BEGIN generated: t (make readme-figures module-cost: none.csv) -->\n<!-- END generated: t -->", "none.csv"},
		{"<!-- BEGIN generated: json_1k (make readme-figures: results/x) -->\n<!-- END generated: json_1k -->", "line 1"},
		{"text\n<!-- BEGIN generated: t (make readme-figures: results/x)\n<!-- END generated: t -->", "line 2"},
		// The datasets' list may not run on into the next line.
		{"<!-- BEGIN generated: t (make readme-figures: results/x\nresults/y) -->\n<!-- END generated: t -->", "line 1"},
		{"<!-- BEGIN generated: t (make readme-figures: results/x) -->", "line 1"}, // no newline: the section cannot start
		{"<!-- BEGIN generated: a_b (make readme-figures: results/x) -->\n<!-- BEGIN generated: t (make readme-figures: results/x) -->\n<!-- END generated: t -->", "line 1"},
	} {
		if _, err := RegenerateSections([]byte(tc.doc), t.TempDir()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want it to mention %q", tc.doc, err, tc.want)
		}
	}
	plain := []byte("# no sections\n")
	if got, err := RegenerateSections(plain, "."); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("a document without sections changed: %q, %v", got, err)
	}
}

// The renderers read the files named and nothing else: each is given a
// small file of its kind and must show exactly its figures.
func TestSectionKindsRenderTheirFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("engine.csv", "tier,shape,bytes,fields,flavor,cpu_ns_per_req\n"+
		"full-crs,get,0,0,stock,600000\nfull-crs,get,0,0,accelerated,300000\n"+
		"full-crs,json_1k,1022,21,stock,9000000\nfull-crs,json_1k,1022,21,accelerated,2000000\n")
	write("engine-rxpf.csv", "tier,shape,bytes,fields,flavor,cpu_ns_per_req\n"+
		"full-crs,get,0,0,stock,600000\nfull-crs,get,0,0,stock-rxpf,400000\nfull-crs,get,0,0,accelerated,200000\n")
	write("module.csv", "flavor,tier,rate_rps,rounds,proxy_us_per_req,proxy_us_min,proxy_us_max,over_envoy_us,over_envoy_us_min,over_envoy_us_max,engine_us_per_req,gap_us\n"+
		"envoy,none,500,3,268.0,251.0,302.0,,,,,\nwaf,headers-only,500,3,442.0,381.0,454.0,152.0,113.0,191.0,12.6,139.4\n")
	write("soak/metadata.txt", "commit: 436cd50e281e9e01bb640b6cf19f6c1c632c9624\nstarted: 2026-11-30T11:17:06Z\ncommand: make soak\ncpus: 2 x CPU\n")
	write("soak/summary.txt", "soak 30m0s at 80 RPS: requests 145771\n")
	for _, tc := range []struct {
		kind, files string
		want        []string
	}{
		{"engine", "engine.csv", []string{
			"| stock | 0.6 ms | 9 ms |", "| accelerated | 0.3 ms | 2 ms |",
			"| ratio stock / accelerated (`engine.csv`) | 2.0x | 4.5x |", "json_1k (21 fields)"}},
		{"engine", "engine-rxpf.csv", []string{
			"| stock-rxpf | 0.4 ms |", "| ratio stock / stock-rxpf (`engine-rxpf.csv`) | 1.5x |",
			"| ratio stock / accelerated (`engine-rxpf.csv`) | 3.0x |", "| ratio stock-rxpf / accelerated (`engine-rxpf.csv`) | 2.0x |"}},
		{"module-cost", "module.csv", []string{
			"| envoy | 500 | 3 | 268 (251-302) |  |  |  |", "| waf, headers-only | 500 | 3 | 442 (381-454) | 152 (113-191) | 12.6 | 139 |"}},
		{"soak", "soak", []string{"**`soak`** (commit 436cd50, started 2026-11-30T11:17:06Z, 2 x CPU): `make soak`",
			"```text\nsoak 30m0s at 80 RPS: requests 145771\n```"}},
	} {
		doc := "<!-- BEGIN generated: s (make readme-figures " + tc.kind + ": " + tc.files + ") -->\n<!-- END generated: s -->\n"
		got, err := RegenerateSections([]byte(doc), dir)
		if err != nil {
			t.Errorf("%s: %v", tc.kind, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(string(got), w) {
				t.Errorf("%s: want %q in\n%s", tc.kind, w, got)
			}
		}
	}
}

// A calibration sweep's known answers come from its backend's note and
// core assignment; what it measured from its knee.
func TestCalibrationTableSetsKnownBesideMeasured(t *testing.T) {
	cost := backend.Cost{CPU: 4 * time.Millisecond}
	meta := dataset.Metadata{Notes: []string{cost.Note()}, CoreAssignment: map[string]string{"backend": "1"}}
	knee := dataset.KneeRow{ConfigID: "direct/headers-only/get", KneeRPS: 241, CoresPer1kAtKnee: 4.1}
	cal, ok := calibrationOf(meta, []dataset.KneeRow{knee})
	if !ok {
		t.Fatal("not read as a calibration sweep")
	}
	var rows []string
	for _, f := range cal.facts {
		rows = append(rows, f.knownText()+" | "+f.measuredText()+" | "+relative(f.measured, f.known))
	}
	want := []string{"capacity 250 RPS | knee 241 RPS | -3.6%", "cost 4.00 cores per 1k RPS | 4.10 cores per 1k RPS | +2.5%"}
	if !slices.Equal(rows, want) {
		t.Errorf("facts %q, want %q", rows, want)
	}
	if _, ok := calibrationOf(dataset.Metadata{}, []dataset.KneeRow{knee}); ok {
		t.Error("a sweep without a calibration backend was read as one")
	}
}

// The slo kind sets sweeps side by side: each configuration's knee, its
// rate at every objective any of them searched (marked as the planner's
// table marks it), its RSS at the knee, and what each gave Envoy's
// environment.
func TestSLOTableSetsSweepsSideBySide(t *testing.T) {
	dir := t.TempDir()
	writeSweep := func(name string, env []string, knee int, slo map[float64]int) {
		t.Helper()
		d := filepath.Join(dir, name)
		meta := dataset.Metadata{SchemaVersion: dataset.SchemaVersion, SweepID: name}
		meta.Plan.EnvoyEnv = env
		config := dataset.KneeRow{SweepID: name, Round: dataset.AllRounds, Rounds: 1, ConfigID: "waf/full-crs/get",
			Flavor: "waf", Tier: "full-crs", Shape: "get", KneeRPS: knee, RSSMBAtKnee: 150}
		var sloRows []dataset.SLOKneeRow
		for ms, rps := range slo {
			sloRows = append(sloRows, dataset.SLOKneeRow{SweepID: name, Round: dataset.AllRounds, Rounds: 1, ConfigID: config.ConfigID,
				Flavor: "waf", Tier: "full-crs", Shape: "get", SLOMs: ms, KneeRPS: rps, Status: "searched", CallsAtKnee: int64(rps) * 20})
		}
		writeSweepFiles(t, d, meta, []dataset.KneeRow{config}, sloRows, nil)
	}
	writeSweep("a", nil, 800, map[float64]int{10: 120, 50: 600})
	writeSweep("b", []string{"GOGC=400"}, 780, map[float64]int{10: 40})
	got, err := sloTable(dir, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| Dataset | Envoy's environment | Config | Knee RPS | p99 <= 10 ms: RPS | p99 <= 50 ms: RPS | RSS at the knee (MB) |",
		"| `a` | default | `waf/full-crs/get` | 800 | 120 | 600 | 150.0 |",
		"| `b` | GOGC=400 | `waf/full-crs/get` | 780 | 40 " + thinMark + " | n/a | 150.0 |",
		thinMark + " Its p99 there was read from fewer than 1000 calls (800 at the fewest",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("want %q in\n%s", want, got)
		}
	}
}

// writeSweepFiles writes a sweep directory that dataset.ReadSweep reads.
func writeSweepFiles(t *testing.T, dir string, meta dataset.Metadata, knees []dataset.KneeRow, slo []dataset.SLOKneeRow, steps []dataset.StepRow) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := dataset.OpenStepWriter(filepath.Join(dir, dataset.StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range []error{
		w.Close(),
		dataset.WriteMetadata(filepath.Join(dir, dataset.MetadataFile), meta),
		dataset.WriteKnees(filepath.Join(dir, dataset.KneesFile), knees),
		dataset.WriteSLOKnees(filepath.Join(dir, dataset.SLOKneesFile), slo),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// The transport kind names each sweep's transport beside its knees, and
// the load generator's CPU per request in the passing run at each round's
// knee (not in a failed run above it); audited configurations are the
// audit table's.
func TestTransportTableNamesTheTransport(t *testing.T) {
	dir := t.TempDir()
	writeSweep := func(name string, transport plan.Transport, loadgenCPU float64) {
		t.Helper()
		meta := dataset.Metadata{SchemaVersion: dataset.SchemaVersion, SweepID: name}
		meta.Plan.Protocol, meta.Plan.TLS = transport.Protocol, transport.TLS
		row := dataset.KneeRow{SweepID: name, Round: 0, Rounds: 1, ConfigID: "waf/full-crs/json_1k", Flavor: "waf", Tier: "full-crs",
			Shape: "json_1k", KneeRPS: 100, CoresPer1kAtKnee: 9.5, P99MsAtKnee: 12.25, AuditBytesPerReqAtKnee: math.NaN(), Transport: transport}
		all := row
		all.Round = dataset.AllRounds
		audited := all
		audited.ConfigID, audited.Tier, audited.AuditBytesPerReqAtKnee = "waf/full-crs-audit/json_1k", "full-crs-audit", 1200
		step := func(rate int, verdict string, cpu float64) dataset.StepRow {
			return dataset.StepRow{SweepID: name, ConfigID: row.ConfigID, Flavor: "waf", Tier: "full-crs", Shape: "json_1k",
				Seq: rate, Kind: "ladder", TargetRPS: rate, Completed: 1000, LoadgenCPUS: cpu, Verdict: verdict, Transport: transport}
		}
		writeSweepFiles(t, filepath.Join(dir, name), meta, []dataset.KneeRow{row, all, audited}, nil,
			[]dataset.StepRow{step(100, dataset.VerdictPass, loadgenCPU), step(200, dataset.VerdictFail, 1)})
	}
	writeSweep("a", plan.Transport{Protocol: plan.ProtocolH1}, 0.02)
	writeSweep("b", plan.Transport{Protocol: plan.ProtocolH2, TLS: true}, 0.05)
	got, err := transportTable(dir, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| `a` | h1 | `waf/full-crs/json_1k` | 100 | 1 | 9.500 | 12.2 | 20 |",
		"| `b` | h2+tls | `waf/full-crs/json_1k` | 100 | 1 | 9.500 | 12.2 | 50 |",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("want %q in\n%s", want, got)
		}
	}
	if strings.Contains(string(got), "full-crs-audit") {
		t.Errorf("an audited configuration is in the table:\n%s", got)
	}
}

func TestSpreadTextReadsAsARange(t *testing.T) {
	tests := []struct{ median, lo, hi, want string }{
		{"146.0", "143.4", "147.4", "146 (143-147)"},
		{"7.2", "-0.2", "12.6", "7 (0-13)"},
		{"1.5", "-3.2", "5.9", "2 (-3 to 6)"},
		{"4.0", "", "", "4"},
		{"", "", "", ""},
	}
	for _, tt := range tests {
		if got := spreadText(tt.median, tt.lo, tt.hi); got != tt.want {
			t.Errorf("spreadText(%q, %q, %q) = %q, want %q", tt.median, tt.lo, tt.hi, got, tt.want)
		}
	}
}
