package sweep

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/procstat"
	"github.com/wafsweep/wafsweep/orchestrator/target/local"
)

// The calibration tests need the backend as a process of its own, pinned
// to its own CPU, as a sweep runs it: this test binary serves as one.
func TestMain(m *testing.M) {
	backend.ServeIfHelper()
	os.Exit(m.Run())
}

// Ground truth on the machine's two CPUs: the load generator on CPU 0, the
// measured process (the calibration backend, or Envoy) alone on CPU 1.
const (
	loadgenCPU  = 0
	measuredCPU = 1
)

// groundTruthTarget is the local target with the calibration backend (or
// the plain one, cost zero) as its own process on backendCPU.
func groundTruthTarget(t *testing.T, cost backend.Cost, backendCPU int) *local.Local {
	t.Helper()
	if runtime.NumCPU() < 2 {
		t.Skip("ground truth needs two CPUs: one for the load generator, one for what it measures")
	}
	t.Setenv(backend.HelperProcessEnv, "1")
	before, err := envoyproc.Affinity(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() {
		_ = procstat.PinProcess(os.Getpid(), before)
		runtime.GOMAXPROCS(procs)
	})
	tgt, err := local.New(local.Options{
		ModulePath:  moduleForTests(t),
		ProxyCPUs:   []int{measuredCPU},
		LoadgenCPUs: []int{loadgenCPU},
		BackendCPUs: []int{backendCPU}, BackendCommand: []string{os.Args[0]}, BackendCost: cost,
		PinSelf: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tgt
}

func moduleForTests(t *testing.T) string {
	root, err := envoyproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if m := os.Getenv("CORAZAWAF_MODULE"); m != "" {
		return m
	}
	return filepath.Join(root, "build", "libcorazawaf.so")
}

func groundTruthPlan(flavor string, ladder ...int) plan.Plan {
	p := plan.Default()
	p.Flavors, p.Tiers, p.Shapes, p.Ladder = []string{flavor}, []string{plan.TierHeadersOnly}, []string{plan.ShapeGet}, ladder
	p.Warmup, p.Measure, p.Cooldown = time.Second, 4*time.Second, 0
	p.FloorRPS, p.Confirm = 0, true
	p.SLOs = nil // the capacity search is what is checked here
	return p
}

func sweepSteps(t *testing.T, p plan.Plan, tgt *local.Local) []dataset.StepRow {
	t.Helper()
	root, err := envoyproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	opts := Options{Plan: p, Target: tgt, SweepID: "groundtruth", OutDir: out, RulesetsDir: filepath.Join(root, "rulesets"),
		CommandLine: []string{"wafsweep", "sweep", "(test)"}}
	if err := Run(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	steps, err := dataset.ReadSteps(filepath.Join(out, StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		t.Logf("%4d RPS %-7s achieved %7.1f, p50 %7.2f ms, p99 %7.2f ms (raw %6.2f, load generator late %5.2f), %.3f cores per 1k, backend %.2f s, %v",
			s.TargetRPS, s.Verdict, s.AchievedRPS, s.P50Ms, s.P99Ms, s.P99RawMs, s.LoadgenLatenessP99Ms, s.CoresPer1k, s.BackendCPUS, s.Reasons)
	}
	return steps
}

// kneeOf is the sweep's aggregate knee row.
func kneeOf(t *testing.T, p plan.Plan, steps []dataset.StepRow) dataset.KneeRow {
	t.Helper()
	knees, err := dataset.BuildKnees(steps, p.Ladder, p.KneeOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range knees {
		if k.Round == dataset.AllRounds {
			return k
		}
	}
	t.Fatal("no knee row")
	return dataset.KneeRow{}
}

// A backend that spends a known CPU time per request on one core has a known
// capacity, 1/cost, and costs a known number of cores per 1k RPS. Swept as
// the direct flavor, the harness must find both within 5%, and above the
// capacity a queue that grows as a fluid model of it says.
func TestCalibrationFindsTheKnownCapacityAndCost(t *testing.T) {
	requireE2E(t)
	const cost = 4 * time.Millisecond // capacity 250 RPS on one core
	tgt := groundTruthTarget(t, backend.Cost{CPU: cost}, measuredCPU)
	p := groundTruthPlan(plan.FlavorDirect, 100, 200, 400)
	// Finer than the reference 5%, so that the bisection's own resolution
	// does not use up the tolerance the harness is checked against.
	p.KneeResolution = 0.02
	checkGroundTruth(t, func() (problems []string, clean bool) {
		steps := sweepSteps(t, p, tgt)
		if k := kneeOf(t, p, steps); k.Invalid {
			return k.Reasons, false // the search ended on a step the harness could not trust
		}
		return capacityProblems(t, p, steps, cost), true
	})
}

// groundTruthAttempts bounds the measurements a ground-truth test makes.
// This VM's host takes CPU time now and then (2-20% of a CPU in bursts of
// seconds, cpu_steal_s); a step it disturbed is invalid, says so, and
// proves nothing either way.
const groundTruthAttempts = 4

// checkGroundTruth runs measure until it gives a clean measurement (no
// step the harness itself declared invalid) that meets the ground truth. A
// clean miss is measured once more before it fails, like the stall test.
// When no attempt was clean, the test is skipped with the harness's
// reasons: nothing was measured, so nothing was proven or disproven.
func checkGroundTruth(t *testing.T, measure func() (problems []string, clean bool)) {
	t.Helper()
	var misses [][]string
	var unclean []string
	for attempt := 1; attempt <= groundTruthAttempts && len(misses) < 2; attempt++ {
		problems, clean := measure()
		switch {
		case clean && len(problems) == 0:
			return
		case clean:
			misses = append(misses, problems)
			t.Logf("attempt %d missed the ground truth: %v", attempt, problems)
		default:
			unclean = append(unclean, problems...)
			t.Logf("attempt %d not clean: %v", attempt, problems)
		}
	}
	if len(misses) == 0 {
		t.Skipf("no clean measurement in %d attempts (the harness marked steps invalid: %v)", groundTruthAttempts, unclean)
	}
	for _, p := range misses[len(misses)-1] {
		t.Error(p)
	}
}

// capacityProblems checks a calibration sweep against its known cost.
func capacityProblems(t *testing.T, p plan.Plan, steps []dataset.StepRow, cost time.Duration) []string {
	var problems []string
	known := float64(time.Second) / float64(cost)
	k := kneeOf(t, p, steps)
	if k.Censored != dataset.CensoredNone {
		return []string{fmt.Sprintf("knee not found: censored %s", k.Censored)}
	}
	kneeRPS := k.KneeRPS
	if math.Abs(float64(kneeRPS)-known) > 0.05*known {
		problems = append(problems, fmt.Sprintf("knee %d RPS: want the known capacity %.0f RPS within 5%%", kneeRPS, known))
	}
	// At the knee the backend is busy: what it spends is the burn plus its
	// HTTP handling. (At low rates every request also pays for waking an
	// idle process up, which the dataset shows and this bound would not.)
	wantCores := float64(cost) / float64(time.Second) * 1000 // 4 cores per 1k RPS
	for _, s := range steps {
		if s.TargetRPS == kneeRPS && s.Verdict == dataset.VerdictPass && math.Abs(s.CoresPer1k-wantCores) > 0.05*wantCores {
			problems = append(problems, fmt.Sprintf("at the knee, %d RPS: %.3f cores per 1k RPS, want the known %.1f within 5%%", s.TargetRPS, s.CoresPer1k, wantCores))
		}
	}
	// Above capacity every connection is busy and completions run at the
	// capacity C, so the call intended at time t (from the run's start)
	// completes near t*R/C: corrected latency t*(R/C - 1). Over a window
	// from W to W+T the median intended time is about W + T/2.
	for _, s := range steps {
		if s.TargetRPS != 400 {
			continue
		}
		capacity := s.AchievedRPS
		model := (s.WarmupS + s.MeasureS/2) * (float64(s.TargetRPS)/capacity - 1) * 1000
		if s.Verdict != dataset.VerdictFail || math.Abs(s.P50Ms-model) > 0.3*model || s.P50RawMs > s.P50Ms/3 {
			problems = append(problems, fmt.Sprintf("at 400 RPS (%s): corrected p50 %.0f ms, raw %.0f ms; the fluid model says %.0f ms", s.Verdict, s.P50Ms, s.P50RawMs, model))
		}
		if math.Abs(capacity-known) > 0.05*known {
			problems = append(problems, fmt.Sprintf("overloaded, the window achieved %.1f RPS: want the capacity %.0f within 5%%", capacity, known))
		}
	}
	return problems
}

// A backend that sleeps a known time per request has a known latency: below
// capacity the corrected p50 and p99 must be it within 5%.
func TestCalibrationFindsTheKnownLatency(t *testing.T) {
	requireE2E(t)
	const sleep = 50 * time.Millisecond
	tgt := groundTruthTarget(t, backend.Cost{Sleep: sleep}, measuredCPU)
	p := groundTruthPlan(plan.FlavorDirect, 50)
	checkGroundTruth(t, func() (problems []string, clean bool) {
		steps := sweepSteps(t, p, tgt)
		valid := slices.DeleteFunc(slices.Clone(steps), func(s dataset.StepRow) bool { return s.Verdict == dataset.VerdictInvalid })
		if len(valid) == 0 {
			return reasonsOf(steps), false // every try of the rate was disturbed
		}
		return latencyProblems(valid, sleep), true
	})
}

// latencyProblems checks a sleep calibration's steps against the known
// latency.
func latencyProblems(steps []dataset.StepRow, sleep time.Duration) []string {
	var problems []string
	known := float64(sleep) / float64(time.Millisecond)
	for _, s := range steps {
		if s.Verdict != dataset.VerdictPass {
			problems = append(problems, fmt.Sprintf("at %d RPS: %s %v", s.TargetRPS, s.Verdict, s.Reasons))
		}
		// The load generator's own lateness (timer wake-ups: 1-3 ms at p99
		// on the VMs seen) is measured and published with every step; the
		// p99 may carry it, nothing else.
		if s.P50Ms < known || s.P50Ms > known*1.05 {
			problems = append(problems, fmt.Sprintf("at %d RPS: corrected p50 %.2f ms, want the known %.0f ms within 5%%", s.TargetRPS, s.P50Ms, known))
		}
		if s.P99Ms < known || s.P99Ms > known*1.05+s.LoadgenLatenessP99Ms {
			problems = append(problems, fmt.Sprintf("at %d RPS: corrected p99 %.2f ms, want the known %.0f ms within 5%% plus the load generator's own lateness p99 %.2f ms",
				s.TargetRPS, s.P99Ms, known, s.LoadgenLatenessP99Ms))
		}
	}
	return problems
}

// reasonsOf lists the reasons of the invalid steps.
func reasonsOf(steps []dataset.StepRow) []string {
	var out []string
	for _, s := range steps {
		if s.Verdict == dataset.VerdictInvalid {
			out = append(out, fmt.Sprintf("%d RPS: %v", s.TargetRPS, s.Reasons))
		}
	}
	return out
}

// A proxy pinned to one CPU can never have used more than one core over a
// window, however hard it is driven: the CPU is read at the window's edges,
// not around the dial, the warm-up and the drain.
func TestOneCoreProxyNeverReportsMoreThanOneCore(t *testing.T) {
	requireE2E(t)
	tgt := groundTruthTarget(t, backend.Cost{}, loadgenCPU) // Envoy alone on its CPU
	p := groundTruthPlan(plan.FlavorEnvoy, 40000)           // far beyond one core
	p.Confirm = false
	p.Measure = 3 * time.Second
	steps := sweepSteps(t, p, tgt)
	if len(steps) == 0 {
		t.Fatal("no steps")
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].Seq < steps[j].Seq })
	busiest := 0.0
	for _, s := range steps {
		cores := s.ProxyCPUS / s.WindowS
		if cores > 1.01 {
			t.Errorf("at %d RPS: Envoy on one CPU used %.3f cores over the window", s.TargetRPS, cores)
		}
		if ok := float64(s.Completed - s.Non2xx - s.SocketErrors); s.CoresPer1k*ok/1000/s.WindowS > 1.01 {
			t.Errorf("at %d RPS: cores per 1k RPS %.4f times %.0f RPS is more than one core", s.TargetRPS, s.CoresPer1k, ok/s.WindowS)
		}
		busiest = max(busiest, busyShare(s))
	}
	// The overload must have kept Envoy's CPU busy in at least one try, or
	// the bound says nothing. What the hypervisor steals from that CPU is
	// time Envoy wanted and could not have, so it counts as busy.
	if busiest < 0.5 {
		t.Errorf("Envoy's CPU was at most %.3f busy (Envoy plus the hypervisor's steal): no step loaded it", busiest)
	}
}

// busyShare is the share of one CPU a step's proxy used or lost to the
// hypervisor over the window. Steal is summed over all the measured CPUs
// (the load generator's too), so this can overstate Envoy's share: it only
// tells an idle proxy from a driven one, the bound itself is checked on
// Envoy's CPU time alone.
func busyShare(s dataset.StepRow) float64 {
	busy := s.ProxyCPUS
	if !math.IsNaN(s.StealS) {
		busy += s.StealS
	}
	return busy / s.WindowS
}

func requireE2E(t *testing.T) {
	t.Helper()
	if _, err := envoyproc.FindBinary(); err != nil {
		if os.Getenv("WAFSWEEP_E2E") == "required" {
			t.Fatalf("real Envoy needed: %v", err)
		}
		t.Skipf("real Envoy needed (make test builds it): %v", err)
	}
}
