package sweep

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/target"
)

// deadTarget "deploys" a configuration whose URL has nothing listening:
// a fake next to the real local target, to check the sweep's reaction.
// loads counts the load runs sent to it.
type deadTarget struct {
	port  int
	loads *atomic.Int64
}

func (d deadTarget) Name() string                 { return "fake" }
func (d deadTarget) Describe() target.Description { return target.Description{} }
func (d deadTarget) Deploy(context.Context, target.Deployment) (target.Deployed, error) {
	return deadDeployment(d), nil
}

type deadDeployment deadTarget

func (d deadDeployment) URL() string { return "http://127.0.0.1:" + strconv.Itoa(d.port) }
func (d deadDeployment) RunLoad(ctx context.Context, specs []loadgen.Spec) (loadgen.Result, []loadgen.Result, error) {
	d.loads.Add(1)
	return loadgen.RunAll(ctx, specs)
}
func (d deadDeployment) Usage() (target.Usage, error) {
	return target.Usage{BackendCPUSeconds: -1, ProxyWrittenBytes: -1, AuditLogBytes: -1}, nil
}
func (d deadDeployment) Restarted() bool     { return false }
func (d deadDeployment) LoadgenCores() int   { return 1 }
func (d deadDeployment) ProxyCores() float64 { return 0 }
func (d deadDeployment) Teardown() error     { return nil }

// A sweep aimed at a port where nothing listens sends it no load (the
// pre-check fails first, on every fresh deployment) and says why.
func TestDeadPortFailsFast(t *testing.T) {
	port, err := envoyproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p := tinyPlan()
	p.Flavors = []string{plan.FlavorDirect}
	p.Warmup, p.Measure = time.Second, 10*time.Second
	out := t.TempDir()
	dead := deadTarget{port: port, loads: new(atomic.Int64)}
	err = Run(t.Context(), Options{Plan: p, Target: dead, SweepID: "dead", OutDir: out})
	if n := dead.loads.Load(); n != 0 {
		t.Fatalf("%d load runs sent to a dead port: a failed pre-check must cost no step", n)
	}
	steps, readErr := dataset.ReadSteps(out + "/" + StepsFile)
	if readErr != nil {
		t.Fatal(readErr)
	}
	if err == nil && (len(steps) == 0 || steps[0].Verdict != dataset.VerdictInvalid) {
		t.Fatalf("a dead target was measured as %+v (err %v)", steps, err)
	}
	reason := ""
	if err != nil {
		reason = err.Error()
	} else {
		reason = strings.Join(steps[0].Reasons, ";")
	}
	if !strings.Contains(reason, "refused") && !strings.Contains(reason, "pre-check") {
		t.Fatalf("the reason does not say the port is dead: %q", reason)
	}
}
