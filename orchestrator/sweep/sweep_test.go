package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/target/local"
)

// tinyPlan is a real sweep small enough for CI: two flavors through real
// Envoy and the real module, a few steps of 2 s.
func tinyPlan() plan.Plan {
	p := plan.Default()
	p.Flavors = []string{plan.FlavorEnvoy, plan.FlavorWAF}
	p.Tiers = []string{plan.TierHeadersOnly}
	p.Shapes = []string{plan.ShapeGet}
	p.Ladder = []int{100, 200}
	p.Connections = 4
	p.Warmup, p.Measure, p.Cooldown = 300*time.Millisecond, 2*time.Second, 0
	p.FloorRPS = 0
	p.Confirm = false
	// make test runs other packages beside this one: the load generator
	// shares its CPUs and is late, which the lateness guard (tested on its
	// own) would rightly call an invalid measurement. These tests check
	// the plumbing.
	p.MaxLoadgenLateness, p.MaxCPUSteal, p.MaxLoadgenDelay = 1, 1, time.Second
	return p
}

func testOptions(t *testing.T, p plan.Plan, out string) Options {
	t.Helper()
	root, err := envoyproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	module := os.Getenv("CORAZAWAF_MODULE")
	if module == "" {
		module = filepath.Join(root, "build", "libcorazawaf.so")
	}
	_, envoyErr := envoyproc.FindBinary()
	_, moduleErr := os.Stat(module)
	if envoyErr != nil || moduleErr != nil {
		if os.Getenv("WAFSWEEP_E2E") == "required" {
			t.Fatalf("real Envoy and module needed: %v %v", envoyErr, moduleErr)
		}
		t.Skipf("real Envoy and module needed (make test builds them): %v %v", envoyErr, moduleErr)
	}
	tgt, err := local.New(local.Options{ModulePath: module})
	if err != nil {
		t.Fatal(err)
	}
	return Options{Plan: p, Target: tgt, SweepID: "test", OutDir: out, RulesetsDir: filepath.Join(root, "rulesets"),
		CommandLine: []string{"wafsweep", "sweep", "(test)"}}
}

func TestTinySweepThroughRealEnvoy(t *testing.T) {
	out := t.TempDir()
	opts := testOptions(t, tinyPlan(), out)
	if err := Run(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	steps, err := dataset.ReadSteps(filepath.Join(out, StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	byConfig := map[string][]dataset.StepRow{}
	for _, s := range steps {
		byConfig[s.ConfigID] = append(byConfig[s.ConfigID], s)
	}
	// How many steps a search takes depends on what passed (a loaded CI
	// machine can fail a step); what must hold is that each search is
	// complete and every measured step carries its numbers.
	for _, id := range []string{"envoy/none/get", "waf/headers-only/get"} {
		rows := byConfig[id]
		var steps []knee.Step
		for _, r := range dataset.CapacitySteps(rows) {
			steps = append(steps, r.KneeStep())
		}
		// Every row, the SLO searches' and the baselines' too, carries its
		// numbers; the capacity search's replay to its end.
		for _, r := range rows {
			if r.Verdict == dataset.VerdictInvalid {
				continue
			}
			if r.Completed == 0 || !(r.ProxyCPUS > 0) || !(r.ProxyRSSPeakMB > 0) || !(r.P99Ms > 0) || r.RawFile == "" {
				t.Errorf("%s at %d rps: counts, resources or latency missing: %+v", id, r.TargetRPS, r)
			}
			if _, err := os.Stat(filepath.Join(out, r.RawFile)); err != nil {
				t.Errorf("raw Fortio JSON missing: %v", err)
			}
		}
		search, err := knee.Replay(opts.Plan.Ladder, opts.Plan.KneeOptions(), steps)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if _, _, done := search.Next(); !done || len(rows) == 0 {
			t.Fatalf("%s: search not finished (%d steps)", id, len(rows))
		}
	}
	knees, err := dataset.ReadKnees(filepath.Join(out, KneesFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(knees) != 4 {
		t.Errorf("knees.csv has %d rows, want a round row and an aggregate row per configuration", len(knees))
	}
	report, err := os.ReadFile(filepath.Join(out, ReportFile))
	if err != nil || !strings.Contains(string(report), "waf") || !strings.Contains(string(report), "plots/") {
		t.Fatalf("report.md: %v\n%s", err, report)
	}
	plots, _ := filepath.Glob(filepath.Join(out, "plots", "*.svg"))
	if len(plots) < 3 {
		t.Errorf("plots: %v", plots)
	}
	meta, err := dataset.ReadMetadata(filepath.Join(out, MetadataFile))
	if err != nil || meta.FinishedAt.IsZero() || meta.CoreAssignment["proxy"] == "" {
		t.Fatalf("metadata: %+v %v", meta, err)
	}
	assertPortable(t, out)
}

// assertPortable checks that what a sweep left in out names none of the
// machine's paths, while the configurations' files are there to be read.
func assertPortable(t *testing.T, out string) {
	t.Helper()
	roots := machineRoots(out, nil)
	var envoyConfigs int
	err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".gz") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if filepath.Base(path) == "envoy.json" {
			envoyConfigs++
		}
		if found := dataset.FindMachinePaths(data, roots); len(found) > 0 {
			t.Errorf("%s names machine paths: %q", path, found)
		}
		return nil
	})
	if err != nil || envoyConfigs == 0 {
		t.Errorf("walking %s: %v (%d Envoy configurations)", out, err, envoyConfigs)
	}
}

// A module flavor's library and spec lie anywhere on the machine: the
// dataset names them by the flavor.
func TestModuleFlavorsPathsAreNamedByTheFlavor(t *testing.T) {
	roots := machineRoots(t.TempDir(), []moduleflavor.Spec{{Name: "peer", LibraryPath: "/opt/peers/build/libcomposer.so", SpecPath: "/srv/specs/peer.json"}})
	for in, want := range map[string]string{
		"/opt/peers/build/libcomposer.so":  "<module peer>/libcomposer.so",
		"peer=/srv/specs/peer.json":        "peer=<module spec peer>/peer.json",
		"/opt/peers/buildx/libcomposer.so": "/opt/peers/buildx/libcomposer.so",
	} {
		if got := dataset.PortableText(in, roots); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// An interrupted sweep keeps its finished steps; the same call resumes it
// and measures only what is missing.
func TestInterruptedSweepResumes(t *testing.T) {
	out := t.TempDir()
	opts := testOptions(t, tinyPlan(), out)
	ctx, cancel := context.WithCancel(t.Context())
	opts.Progress = &cancelAfterSteps{n: 1, cancel: cancel}
	if err := Run(ctx, opts); err == nil {
		t.Fatal("an interrupted sweep must report the interruption")
	}
	first, err := dataset.ReadSteps(filepath.Join(out, StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(first) == 0 || len(first) >= 4 {
		t.Fatalf("after the interruption %d steps are recorded, want some but not all", len(first))
	}
	// A kill in the middle of a write leaves a torn line: resuming drops it.
	f, err := os.OpenFile(filepath.Join(out, StepsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("test,0,waf/headers-only/get,waf,head")
	f.Close()

	opts = testOptions(t, tinyPlan(), out)
	if err := Run(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	all, err := dataset.ReadSteps(filepath.Join(out, StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range all {
		key := fmt.Sprintf("%s/%d", r.ConfigID, r.Seq)
		if seen[key] {
			t.Fatalf("step %s recorded twice", key)
		}
		seen[key] = true
	}
	if len(all) <= len(first) || len(seen) != len(all) {
		t.Fatalf("after resuming %d steps (before %d)", len(all), len(first))
	}
	for i, r := range first {
		if !all[i].StartedAt.Equal(r.StartedAt) || all[i].ConfigID != r.ConfigID || all[i].Seq != r.Seq {
			t.Fatalf("step %d was measured again or changed: %+v vs %+v", i, all[i], r)
		}
	}
}

// cancelAfterSteps cancels the sweep after n progress lines about steps.
type cancelAfterSteps struct {
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfterSteps) Write(p []byte) (int, error) {
	if strings.Contains(string(p), " rps: ") {
		c.n--
		if c.n == 0 {
			c.cancel()
		}
	}
	return len(p), nil
}

// The module-off tier runs the real module with mode off: its pre-check
// (an attack every tier blocks gets through) passes, so its steps measure.
func TestModuleOffTierRunsTheModuleWithoutInspecting(t *testing.T) {
	p := tinyPlan()
	p.Flavors, p.Tiers, p.Ladder, p.SLOs = []string{plan.FlavorWAF}, []string{plan.TierModuleOff}, []int{100}, nil
	out := t.TempDir()
	opts := testOptions(t, p, out)
	if err := Run(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	steps, err := dataset.ReadSteps(filepath.Join(out, StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) == 0 {
		t.Fatal("no steps")
	}
	for _, r := range steps {
		if r.ConfigID != "waf/module-off/get" || r.Verdict == dataset.VerdictInvalid || !(r.ProxyCPUS > 0) {
			t.Errorf("%s at %d rps: %s %v", r.ConfigID, r.TargetRPS, r.Verdict, r.Reasons)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(out, "runs", "r0", "waf", "module-off", "get", "envoy.json"))
	if err != nil || !strings.Contains(string(cfg), `{\"mode\":\"off\"}`) {
		t.Errorf("the WAF configuration is not mode off: %v\n%s", err, cfg)
	}
}
