package sweep

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/precheck"
	"github.com/wafsweep/wafsweep/orchestrator/target"
)

// scriptedMix answers every run of a step with a full window and the
// status codes codesOf gives it.
type scriptedMix struct {
	scriptedDeployment
	codesOf func(loadgen.Spec) map[int]int64
}

func (d scriptedMix) RunLoad(_ context.Context, specs []loadgen.Spec) (loadgen.Result, []loadgen.Result, error) {
	specs[0].OnEdge(loadgen.WindowStart, time.Now())
	specs[0].OnEdge(loadgen.WindowEnd, time.Now())
	each := make([]loadgen.Result, len(specs))
	all := loadgen.Result{Duration: 2 * time.Second}
	for i, s := range specs {
		calls := int64(s.QPS * d.window.Seconds())
		w := d.window
		w.Scheduled, w.Completed, w.OK = s.QPS*w.Seconds(), calls, calls
		each[i] = loadgen.Result{Completed: calls, Window: &w, Codes: d.codesOf(s)}
		if !s.Apart {
			all.Completed += calls
			all.Scheduled += calls
		}
	}
	w := d.window
	w.Scheduled, w.Completed, w.OK = float64(all.Completed), all.Completed, all.Completed
	all.Window = &w
	return all, each, nil
}

// With an attack share, the step sends the benign load at the rest of the
// rate and each of the tier's attacks at an equal part of the share, Apart
// and over a connection of its own.
func TestAttackShareSplitsTheStep(t *testing.T) {
	p := tinyPlan()
	p.AttackSharePct = 2
	cfg := plan.Config{Flavor: plan.FlavorWAF, Tier: plan.TierFullCRS, Shape: "mix:get=3,json_1k=1"}
	shape, err := plan.ShapeByName(cfg.Shape)
	if err != nil {
		t.Fatal(err)
	}
	c := &configRun{runner: &runner{opts: Options{Plan: p}}, cfg: cfg, shape: shape, deployed: scriptedDeployment{}}
	runs := c.runs(200, 8)
	attacks := precheck.Attacks(cfg)
	if len(runs) != 2+len(attacks) {
		t.Fatalf("%d runs, want 2 members and %d attacks", len(runs), len(attacks))
	}
	if runs[0].spec.QPS != 147 || runs[1].spec.QPS != 49 || runs[0].spec.Apart || benignConnections(runs) != 8 {
		t.Errorf("benign runs %+v %+v: want 147 and 49 RPS over 8 connections", runs[0].spec, runs[1].spec)
	}
	for i, a := range attacks {
		r := runs[2+i]
		if !r.attack() || r.want != 403 || !r.spec.Apart || r.spec.Connections != 1 || r.spec.QPS != 4.0/float64(len(attacks)) ||
			!strings.HasSuffix(r.spec.URL, a.Path) || string(r.spec.Body) != string(a.Body) || r.spec.Headers[backend.HeaderAttack] != "1" {
			t.Errorf("attack %s: run %+v", a.Name, r)
		}
	}
}

// A step with attacks passes only when every attack got its status and no
// benign call was blocked, whatever the error ratio would allow.
func TestAttacksDecideTheStep(t *testing.T) {
	start := time.Now()
	window := loadgen.Window{Start: start, End: start.Add(10 * time.Second)}
	for _, tc := range []struct {
		name          string
		codesOf       func(loadgen.Spec) map[int]int64
		verdict, want string
	}{
		{"every attack blocked", func(s loadgen.Spec) map[int]int64 {
			if s.Apart {
				return map[int]int64{403: 5}
			}
			return map[int]int64{200: 990}
		}, dataset.VerdictPass, ""},
		{"one attack through", func(s loadgen.Spec) map[int]int64 {
			if s.Apart && strings.Contains(s.URL, "/search") {
				return map[int]int64{403: 4, 200: 1}
			}
			if s.Apart {
				return map[int]int64{403: 5}
			}
			return map[int]int64{200: 990}
		}, dataset.VerdictFail, "1 attack calls did not get their status"},
		{"an attack's connection failed", func(s loadgen.Spec) map[int]int64 {
			if s.Apart {
				return map[int]int64{403: 4, -1: 1}
			}
			return map[int]int64{200: 990}
		}, dataset.VerdictFail, "attack calls did not get their status"},
		{"one benign call blocked", func(s loadgen.Spec) map[int]int64 {
			if s.Apart {
				return map[int]int64{403: 5}
			}
			return map[int]int64{200: 989, 403: 1}
		}, dataset.VerdictFail, "1 benign calls were blocked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tinyPlan()
			p.AttackSharePct = 1
			journal := testJournal(t)
			cfg := plan.Config{Flavor: plan.FlavorWAF, Tier: plan.TierFullCRS, Shape: plan.ShapeGet}
			shape, _ := plan.ShapeByName(cfg.Shape)
			c := &configRun{runner: &runner{opts: Options{Plan: p, SweepID: "test"}, journal: journal}, cfg: cfg, shape: shape,
				deployed: scriptedMix{scriptedDeployment{window: window}, tc.codesOf}}
			row, members, err := c.step(t.Context(), 100, knee.KindLadder, 0)
			if err != nil {
				t.Fatal(err)
			}
			if row.Verdict != tc.verdict || row.Verdict != dataset.VerdictOf(row.KneeStep()) {
				t.Errorf("verdict %s %q, want %s", row.Verdict, row.Reasons, tc.verdict)
			}
			if got := strings.Join(row.Reasons, "; "); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("reasons %q, want %q", got, tc.want)
			}
			attacks := len(precheck.Attacks(cfg))
			if len(members) != 1+attacks || members[0].Role != dataset.RoleBenign || members[1].Role != dataset.RoleAttack ||
				members[1].WantStatus != 403 || row.AttackCalls != int64(attacks)*2 {
				t.Errorf("attack calls %d, members %+v", row.AttackCalls, members)
			}
			if err := journal.Append(row, members...); err != nil {
				t.Errorf("the journal refused the step's members: %v", err)
			}
		})
	}
}

// idleProxy is a proxy whose CPU did not move over the window.
type idleProxy struct{ scriptedDeployment }

func (idleProxy) Usage() (target.Usage, error) {
	return target.Usage{ProxyCPUSeconds: 3, ProxyPeakRSSBytes: 64 << 20, BackendCPUSeconds: -1, ProxyThrottledSeconds: -1,
		StealSeconds: -1, ProxyWrittenBytes: -1, AuditLogBytes: -1}, nil
}

// Requests cost CPU: a window whose proxy CPU is within its idle estimate
// has no cores per 1k (NaN), never zero or a negative figure.
func TestCoresPer1kIsNeverBelowZero(t *testing.T) {
	start := time.Now()
	w := loadgen.Window{Start: start, End: start.Add(time.Second), Scheduled: 100, Completed: 100, OK: 100}
	journal := testJournal(t)
	for _, idle := range []float64{0, 0.01} {
		c := &configRun{runner: &runner{opts: Options{Plan: tinyPlan(), SweepID: "test"}, journal: journal}, idleCPUPS: idle,
			cfg: plan.Config{Flavor: plan.FlavorEnvoy, Tier: plan.TierNone, Shape: plan.ShapeGet}, deployed: idleProxy{scriptedDeployment{window: w}}}
		row, _, err := c.step(t.Context(), 100, knee.KindLadder, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(row.CoresPer1k) || row.ProxyCPUS != 0 {
			t.Errorf("idle %v: cores per 1k %v over %v s of proxy CPU, want NaN", idle, row.CoresPer1k, row.ProxyCPUS)
		}
	}
}
