package sweep

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/target"
)

func TestWindowReasons(t *testing.T) {
	base := dataset.StepRow{TargetRPS: 1000, WindowS: 20, Scheduled: 20000, Completed: 20000, ProxyCPUS: 10, ProxyCompleted: 20003,
		Intended: 20000, P50FirstFifthMs: 0.5, P50LastFifthMs: 0.6,
		P99Ms: 8, LoadgenLatenessP99Ms: 0.5, LoadgenRunDelayS: 3}
	tests := []struct {
		name   string
		change func(*dataset.StepRow)
		cores  float64
		want   string // substring of the one reason, "" for none
	}{
		{"a proxy within its core", func(*dataset.StepRow) {}, 1, ""},
		{"a proxy at exactly its core", func(r *dataset.StepRow) { r.ProxyCPUS = 20 }, 1, ""},
		{"more CPU than one core has", func(r *dataset.StepRow) { r.ProxyCPUS = 30.7 }, 1, "proxy used 1.535 cores over the window, more than the 1"},
		{"no bound known", func(r *dataset.StepRow) { r.ProxyCPUS = 30.7 }, 0, ""},
		{"counters a few requests apart", func(r *dataset.StepRow) { r.ProxyCompleted = 20150 }, 1, ""},
		{"counters apart", func(r *dataset.StepRow) { r.ProxyCompleted = 19000 }, 1, "proxy counted 19000 requests in the window, the load generator 20000 (0 of them without a response)"},
		{"the proxy counting more than was sent", func(r *dataset.StepRow) { r.ProxyCompleted = 21000 }, 1, "proxy counted 21000 requests in the window, the load generator 20000"},
		// reference-json_10k's first try, stock module at 1,000 RPS: 355 of
		// 404 calls timed out while Envoy still held them.
		{"timed-out calls the proxy never finished", func(r *dataset.StepRow) {
			r.Completed, r.SocketErrors, r.ProxyCompleted, r.ProxyCPUS = 404, 355, 49, 19.99
		}, 1, ""},
		{"timed-out calls the proxy finished after all", func(r *dataset.StepRow) {
			r.Completed, r.SocketErrors, r.ProxyCompleted, r.ProxyCPUS = 404, 355, 400, 19.99
		}, 1, ""},
		{"fewer at the proxy than even the answered calls", func(r *dataset.StepRow) {
			r.Completed, r.SocketErrors, r.ProxyCompleted = 20000, 1000, 18000
		}, 1, "proxy counted 18000 requests in the window, the load generator 20000 (1000 of them without a response)"},
		{"a proxy reading late by a skew measured", func(r *dataset.StepRow) { r.ProxyCompleted, r.ProxyCountSkewMs = 19500, 400 }, 1, ""},
		{"a proxy reading late by more than the skew measured", func(r *dataset.StepRow) { r.ProxyCompleted, r.ProxyCountSkewMs = 19300, 400 }, 1, "proxy counted 19300 requests"},
		{"a skew not measured", func(r *dataset.StepRow) { r.ProxyCompleted, r.ProxyCountSkewMs = 19500, math.NaN() }, 1, "proxy counted 19500 requests"},
		// TestAttackShareUnderLoad in a loaded make test: 7 requests, 88 ms
		// at 81 RPS, more than the fixed slack of 6.04.
		{"a low rate's count off by a reading's delay", func(r *dataset.StepRow) {
			r.TargetRPS, r.WindowS, r.Scheduled, r.Intended, r.Completed, r.ProxyCompleted, r.ProxyCPUS, r.ProxyCountSkewMs = 80, 4, 320, 320, 324, 317, 1, 0
		}, 1, "proxy counted 317 requests in the window, the load generator 324"},
		{"a low rate's count off by the skew measured", func(r *dataset.StepRow) {
			r.TargetRPS, r.WindowS, r.Scheduled, r.Intended, r.Completed, r.ProxyCompleted, r.ProxyCPUS, r.ProxyCountSkewMs = 80, 4, 320, 320, 324, 317, 1, 90
		}, 1, ""},
		// The first default sweep's waf/full-crs/json_1k at 1,000 RPS, ten
		// times its capacity: the warm-up's queue drained into the window
		// and the proxy counted more than the load generator, four times
		// over, and the configuration ended without a knee. Overloaded
		// whoever counts: a failure, not an invalid measurement.
		{"an overloaded step, counted apart", func(r *dataset.StepRow) {
			r.Scheduled, r.Intended, r.Completed, r.Unsent, r.ProxyCompleted = 5000, 5000, 489, 4520, 509
		}, 1, ""},
		{"counted apart, the proxy's count a pass", func(r *dataset.StepRow) {
			r.Scheduled, r.Intended, r.Completed, r.Unsent, r.ProxyCompleted = 5000, 5000, 4800, 200, 4990
		}, 1, "proxy counted 4990 requests in the window, the load generator 4800"},
		{"counted apart, the queue growing", func(r *dataset.StepRow) {
			r.ProxyCompleted, r.P50FirstFifthMs, r.P50LastFifthMs = 21000, 3, 900
		}, 1, ""},
		{"attacks counted at the proxy", func(r *dataset.StepRow) { r.AttackCalls, r.ProxyCompleted = 200, 20200 }, 1, ""},
		{"no proxy counter", func(r *dataset.StepRow) { r.ProxyCompleted = -1; r.Completed = 5 }, 1, ""},
		{"late beside a tight objective", func(r *dataset.StepRow) { r.LoadgenLatenessP99Ms, r.SLOMs = 2.6, 10 }, 1, "load generator's own lateness p99 2.60 ms is over 25% of the 10 ms objective"},
		{"late, but within a quarter of the objective", func(r *dataset.StepRow) { r.LoadgenLatenessP99Ms, r.SLOMs = 2.4, 10 }, 1, ""},
		{"late on a capacity step, a large share of a small p99", func(r *dataset.StepRow) { r.LoadgenLatenessP99Ms, r.P99Ms = 1.1, 1.3 }, 1, ""},
		{"not keeping its schedule", func(r *dataset.StepRow) { r.LoadgenLatenessP99Ms = 12 }, 1, "load generator's own lateness p99 12.00 ms is over 10 ms"},
		{"stolen CPU", func(r *dataset.StepRow) { r.StealS = 0.5 }, 1, "the hypervisor took 2.5% of a CPU from the measured CPUs"},
		// 0.31 s taken in one second of a 20 s window: 1.55% of the window,
		// under its limit, while that second's requests stalled.
		{"stolen CPU in one burst", func(r *dataset.StepRow) { r.StealS, r.StealPeakShare = 0.31, 0.31 }, 1,
			"the hypervisor took 31% of a CPU from the measured CPUs in one second of the window (limit 10%)"},
		{"stolen CPU spread over the window", func(r *dataset.StepRow) { r.StealS, r.StealPeakShare = 0.31, 0.04 }, 1, ""},
		{"steal not read every second", func(r *dataset.StepRow) { r.StealS, r.StealPeakShare = 0.31, math.NaN() }, 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			row := base
			tc.change(&row)
			got := windowReasons(row, tc.cores, plan.Default())
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("reasons %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("reasons %q, want one containing %q", got, tc.want)
			}
		})
	}
}

// The step's counts come from the window, never from Fortio's totals,
// which include the warm-up and the tail.
func TestFillCountsTakesTheWindow(t *testing.T) {
	start := time.Unix(100, 0)
	edges := [2]edgeSample{ // the end's count asked for 1 ms later than the start's, answered 4 ms later
		{completed: 500, countedAfter: [2]time.Duration{time.Millisecond, 3 * time.Millisecond}},
		{completed: 1499, countedAfter: [2]time.Duration{2 * time.Millisecond, 7 * time.Millisecond}},
	}
	res := loadgen.Result{Completed: 1700, Non2xx: 9, SocketsOpened: 8, P99Ms: 1, Window: &loadgen.Window{
		Start: start, End: start.Add(10 * time.Second), Scheduled: 1000.4,
		Completed: 998, OK: 996, Non2xx: 1, SocketErrors: 1, Unsent: 2, Intended: 1001,
		FirstFifth: loadgen.Latency{P50Ms: 1.5}, LastFifth: loadgen.Latency{P50Ms: 2.5},
		Corrected: loadgen.Latency{P50Ms: 2, P99Ms: 40}, Raw: loadgen.Latency{P50Ms: 1, P99Ms: 5},
		Lateness: loadgen.Latency{P99Ms: 35}, RunDelaySeconds: 0.02,
	}}
	var row dataset.StepRow
	fillCounts(&row, res, edges)
	want := dataset.StepRow{
		WindowS: 10, Scheduled: 1000, Completed: 998, Non2xx: 1, SocketErrors: 1, SocketsOpened: 8, AchievedRPS: 99.8,
		P50Ms: 2, P99Ms: 40, P50RawMs: 1, P99RawMs: 5, LoadgenLatenessP99Ms: 35, Unsent: 2, ProxyCompleted: 999, ProxyCountSkewMs: 6, LoadgenRunDelayS: 0.02,
		Intended: 1001, P50FirstFifthMs: 1.5, P50LastFifthMs: 2.5,
	}
	if !reflect.DeepEqual(row, want) {
		t.Errorf("row\n%+v\nwant\n%+v", row, want)
	}
}

func TestFillWrites(t *testing.T) {
	usage := func(audit, written int64) target.Usage {
		return target.Usage{AuditLogBytes: audit, ProxyWrittenBytes: written}
	}
	tests := []struct {
		name             string
		before, after    target.Usage
		perReq, diskPerS float64 // NaN: not measured
		completed        int64
	}{
		{"audit log and disk", usage(1000, 4096), usage(801000, 4096+1_000_000), 400, 100_000, 2000},
		{"the log not created yet at the start", usage(0, 0), usage(2000, 0), 1, 0, 2000},
		{"no audit log", usage(-1, 0), usage(-1, 8192), math.NaN(), 819.2, 2000},
		{"writes unreadable", usage(0, -1), usage(3000, -1), 1.5, math.NaN(), 2000},
		{"nothing completed", usage(0, 0), usage(0, 0), math.NaN(), 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			row := dataset.StepRow{WindowS: 10, Completed: tc.completed, AuditBytesPerReq: math.NaN(), ProxyDiskWriteBytesPerS: math.NaN()}
			fillWrites(&row, tc.before, tc.after)
			if !sameFigure(row.AuditBytesPerReq, tc.perReq) || !sameFigure(row.ProxyDiskWriteBytesPerS, tc.diskPerS) {
				t.Errorf("audit bytes/req %v, disk bytes/s %v; want %v, %v", row.AuditBytesPerReq, row.ProxyDiskWriteBytesPerS, tc.perReq, tc.diskPerS)
			}
		})
	}
}

func sameFigure(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

var _ target.ProxyCounter = (*countingDeployment)(nil)

// countingDeployment is a fake with a proxy counter, for the edge
// sampler; its counter answers after answerIn.
type countingDeployment struct {
	deadDeployment
	count    int64
	cpu      float64
	answerIn time.Duration
}

func (c *countingDeployment) ProxyCompleted() (int64, error) {
	time.Sleep(c.answerIn)
	c.count += 100
	return c.count, nil
}

func (c *countingDeployment) Usage() (target.Usage, error) {
	c.cpu += 1.5
	return target.Usage{ProxyCPUSeconds: c.cpu, BackendCPUSeconds: -1, ProxyWrittenBytes: -1, AuditLogBytes: -1}, nil
}

// Each edge keeps the proxy's count and CPU, and when after the edge the
// count was read: a sampler that ran late at one edge only makes the span
// between the counts longer or shorter than the window.
func TestWindowEdgesSampleBothEdges(t *testing.T) {
	const late, answerIn = 50 * time.Millisecond, 20 * time.Millisecond
	d := &countingDeployment{answerIn: answerIn}
	edges := &windowEdges{deployed: d}
	if _, err := edges.result(); err == nil {
		t.Error("no edges sampled, no error")
	}
	edges.sample(loadgen.WindowStart, time.Now().Add(-late))
	edges.sample(loadgen.WindowEnd, time.Now())
	got, err := edges.result()
	if err != nil {
		t.Fatal(err)
	}
	if got[0].completed != 100 || got[1].completed != 200 || got[1].usage.ProxyCPUSeconds-got[0].usage.ProxyCPUSeconds != 1.5 {
		t.Errorf("edges %+v", got)
	}
	// Lower bounds only: the scheduler may add to every interval.
	start, end := got[0].countedAfter, got[1].countedAfter
	if start[0] < late || start[1]-start[0] < answerIn || end[1]-end[0] < answerIn {
		t.Errorf("counted after the start %v, after the end %v: want asked %v late, answered %v after asking", start, end, late, answerIn)
	}
	if skew := countSkew(got); skew < late+answerIn {
		t.Errorf("skew %v: the start was read at least %v after its edge, the end's asked for at once", skew, late+answerIn)
	}
}

func TestCountSkew(t *testing.T) {
	ms := func(asked, answered int) [2]time.Duration {
		return [2]time.Duration{time.Duration(asked) * time.Millisecond, time.Duration(answered) * time.Millisecond}
	}
	tests := []struct {
		name       string
		start, end [2]time.Duration
		want       time.Duration
	}{
		{"both read alike", ms(1, 2), ms(1, 2), time.Millisecond},
		{"the end read late: a longer span", ms(1, 2), ms(80, 90), 89 * time.Millisecond},
		{"the start read late: a shorter span", ms(80, 90), ms(1, 2), 89 * time.Millisecond},
		{"both late alike", ms(80, 81), ms(80, 81), time.Millisecond},
		{"not read", ms(0, 0), ms(0, 0), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := countSkew([2]edgeSample{{countedAfter: tc.start}, {countedAfter: tc.end}}); got != tc.want {
				t.Errorf("skew %v, want %v", got, tc.want)
			}
		})
	}
}

// A directory holding a sweep of an older dataset schema is not resumed
// into: its steps were counted another way.
func TestOlderSchemaIsNotResumed(t *testing.T) {
	out := t.TempDir()
	old := dataset.Metadata{SweepID: "old"} // schema_version absent: version 1
	if err := dataset.WriteMetadata(out+"/"+MetadataFile, old); err != nil {
		t.Fatal(err)
	}
	p := tinyPlan()
	p.Flavors = []string{"direct"}
	err := Run(t.Context(), Options{Plan: p, Target: deadTarget{port: 1}, SweepID: "old", OutDir: out})
	if err == nil || !strings.Contains(err.Error(), "dataset schema 1, this wafsweep writes schema 2") {
		t.Fatalf("err %v", err)
	}
}

// scriptedDeployment answers every load with one chosen window: the
// load generator's side of a step, without sending load.
type scriptedDeployment struct {
	deadDeployment
	window loadgen.Window
}

// RunLoad answers a step of one run with the scripted window.
func (d scriptedDeployment) RunLoad(_ context.Context, specs []loadgen.Spec) (loadgen.Result, []loadgen.Result, error) {
	specs[0].OnEdge(loadgen.WindowStart, time.Now())
	specs[0].OnEdge(loadgen.WindowEnd, time.Now())
	w := d.window
	res := loadgen.Result{Completed: w.Completed, Window: &w, Duration: 2 * time.Second}
	return res, []loadgen.Result{res}, nil
}

func (d scriptedDeployment) Usage() (target.Usage, error) {
	return target.Usage{BackendCPUSeconds: -1, ProxyThrottledSeconds: -1, StealSeconds: -1, ProxyWrittenBytes: -1, AuditLogBytes: -1}, nil
}

// A step of an SLO search is judged on its objective when it is measured:
// its verdict, reasons and validity in steps.csv are the ones its search
// replays, not the capacity step's.
func TestSLOStepIsJudgedOnItsObjective(t *testing.T) {
	start := time.Now()
	sustained := loadgen.Window{Start: start, End: start.Add(time.Second), Scheduled: 100, Completed: 100, OK: 100}
	tests := []struct {
		name         string
		sloMs        float64
		p99, lateMs  float64
		want, reason string
	}{
		{"capacity step: p99 does not count", 0, 40, 3, dataset.VerdictPass, ""},
		{"within its objective", 50, 40, 3, dataset.VerdictPass, ""},
		{"over its objective", 10, 40, 0.5, dataset.VerdictFail, "p99 40.00 ms is over the 10 ms objective"},
		{"the load generator late for the objective", 10, 5, 3, dataset.VerdictInvalid, "over 25% of the 10 ms objective"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := sustained
			w.Corrected, w.Lateness = loadgen.Latency{P50Ms: 1, P99Ms: tc.p99}, loadgen.Latency{P99Ms: tc.lateMs}
			p := tinyPlan()
			p.MaxLoadgenLateness, p.MaxLoadgenDelay = plan.Default().MaxLoadgenLateness, plan.Default().MaxLoadgenDelay
			c := &configRun{runner: &runner{opts: Options{Plan: p, SweepID: "test"}, journal: testJournal(t)},
				cfg: plan.Config{Flavor: plan.FlavorDirect, Tier: plan.TierNone, Shape: plan.ShapeGet}, deployed: scriptedDeployment{window: w}}
			row, _, err := c.step(t.Context(), 100, knee.KindLadder, tc.sloMs)
			if err != nil {
				t.Fatal(err)
			}
			if row.SLOMs != tc.sloMs || row.Verdict != tc.want || row.Verdict != dataset.VerdictOf(row.KneeStep()) {
				t.Errorf("slo %g ms, verdict %s %q, want %s", row.SLOMs, row.Verdict, row.Reasons, tc.want)
			}
			if got := strings.Join(row.Reasons, "; "); (tc.reason == "") != (got == "") || !strings.Contains(got, tc.reason) {
				t.Errorf("reasons %q, want %q", got, tc.reason)
			}
		})
	}
}

// testJournal is an empty steps journal in t's temporary directory,
// closed when t ends.
func testJournal(t *testing.T) *dataset.Journal {
	t.Helper()
	journal, err := dataset.OpenJournal(filepath.Join(t.TempDir(), StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { journal.Close() })
	return journal
}

// A step that was not sustained says which way: its queue grew through
// the window, or the window ended with a backlog.
func TestFailReasonsNameTheQueue(t *testing.T) {
	base := dataset.StepRow{TargetRPS: 630, WindowS: 5, Scheduled: 3150, Completed: 3150, Intended: 3150,
		P50FirstFifthMs: 3, P50LastFifthMs: 4, P50RawMs: 2.5}
	tests := []struct {
		name       string
		first, raw float64
		last       float64
		want       []string
	}{
		{"sustained", 3, 2.5, 4, nil},
		{"grew", 10, 30, 60, []string{"not sustained: p50 rose from 10 ms in the window's first fifth to 60 ms in its last"}},
		// The accelerated build on json_1k at 630 RPS: the queue the tail drained.
		{"a backlog", 325, 103, 450, []string{"not sustained: the window ended with a backlog, p50 450 ms in its last fifth for 103 ms raw"}},
		{"both", 3, 2.5, 40, []string{"not sustained: p50 rose from 3 ms", "not sustained: the window ended with a backlog, p50 40 ms"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			row := base
			row.P50FirstFifthMs, row.P50RawMs, row.P50LastFifthMs = tc.first, tc.raw, tc.last
			got := failReasons(row)
			if len(got) != len(tc.want) {
				t.Fatalf("reasons %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("reason %q, want %q", got[i], tc.want[i])
				}
			}
		})
	}
}
