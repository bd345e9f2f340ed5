package local_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/sweep"
)

// A mixed shape is swept through the module with its members sent
// together: each step's members are recorded, in proportion, adding up to
// the step, and the report shows them.
func TestSweepOfAMixedShape(t *testing.T) {
	requireModule(t)
	const mix = "mix:get=3,json_1k=1"
	out := sweepAtLowRate(t, plan.FlavorWAF, func(p *plan.Plan) { p.Shapes = []string{mix} })
	sw, err := dataset.ReadSweep(out)
	if err != nil {
		t.Fatal(err)
	}
	steps, members := sw.Steps, sw.Members
	mixShape, err := plan.ShapeByName(mix)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.ShapeBytes != mixShape.Bytes || s.ShapeBytes == 0 {
			t.Errorf("step at %d rps: shape_bytes %d, want the members' weighted mean %d", s.TargetRPS, s.ShapeBytes, mixShape.Bytes)
		}
		var got []dataset.MemberRow
		var completed int64
		for _, m := range members {
			if m.Of(s) {
				got = append(got, m)
				completed += m.Completed
			}
		}
		if len(got) != 2 || got[0].Member != plan.ShapeGet || got[1].Member != plan.ShapeJSON1K {
			t.Fatalf("step %d at %d rps: members %+v, want get and json_1k", s.Seq, s.TargetRPS, got)
		}
		if got[0].TargetRPS != 3*got[1].TargetRPS || got[0].TargetRPS+got[1].TargetRPS != float64(s.TargetRPS) ||
			completed != s.Completed || got[0].Connections+got[1].Connections != s.Connections {
			t.Errorf("step at %d rps (%d completed, %d connections): members %+v", s.TargetRPS, s.Completed, s.Connections, got)
		}
	}
	report, err := os.ReadFile(filepath.Join(out, sweep.ReportFile))
	if err != nil || !strings.Contains(string(report), "## Mixed shapes and attacks") {
		t.Errorf("the report has no mixed shapes section (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(out, "runs", "r0", plan.FlavorWAF, plan.TierFullCRS, plan.PathName(mix))); err != nil {
		t.Errorf("the run directory is not named by the mix's path name: %v", err)
	}
}
