package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
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
	for _, id := range []string{"envoy/none/get", "waf/headers-only/get"} {
		rows := byConfig[id]
		if len(rows) != 2 {
			t.Fatalf("%s: %d steps, want the 2 ladder rates: %+v", id, len(rows), rows)
		}
		for _, r := range rows {
			if r.Verdict != dataset.VerdictPass || r.Completed < r.Scheduled*99/100 || r.Non2xx != 0 {
				t.Errorf("%s at %d rps: %s %v (completed %d of %d, non2xx %d)", id, r.TargetRPS, r.Verdict, r.Reasons, r.Completed, r.Scheduled, r.Non2xx)
			}
			if !(r.ProxyCPUS > 0) || !(r.ProxyRSSPeakMB > 0) || !(r.P99Ms > 0) || r.RawFile == "" {
				t.Errorf("%s at %d rps: resources or latency missing: %+v", id, r.TargetRPS, r)
			}
			if _, err := os.Stat(filepath.Join(out, r.RawFile)); err != nil {
				t.Errorf("raw Fortio JSON missing: %v", err)
			}
		}
	}
	knees, err := dataset.ReadKnees(filepath.Join(out, KneesFile))
	if err != nil {
		t.Fatal(err)
	}
	censoredAbove := 0
	for _, k := range knees {
		if k.Censored == dataset.CensoredAbove {
			censoredAbove++
		}
	}
	if censoredAbove < 2 {
		t.Errorf("both configurations pass the whole ladder: want them censored above, got %+v", knees)
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
	if len(all) != 4 {
		t.Fatalf("after resuming %d steps, want 4 (no step lost, none duplicated)", len(all))
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
