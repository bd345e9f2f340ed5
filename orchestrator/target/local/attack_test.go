package local_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// An attack share sends the tier's attacks beside the benign load. Through
// the module none reaches the backend, whose log counts the marked
// requests it served, and every step records them all blocked; through
// vanilla Envoy, which inspects nothing, they all reach it, which shows
// the count can fail.
func TestAttackShareUnderLoad(t *testing.T) {
	requireModule(t)
	for _, tc := range []struct {
		flavor, tier string
		want         int
	}{
		{plan.FlavorWAF, plan.TierFullCRS, 403},
		{plan.FlavorEnvoy, plan.TierNone, 200},
		{"any", plan.TierFullCRS, 403}, // the corazawaf build as a module flavor
	} {
		t.Run(tc.flavor, func(t *testing.T) {
			// A quarter of 40-80 RPS over 4 s windows: every attack has
			// calls in each window, and vanilla Envoy enough benign calls
			// that its CPU per request stands out of its idle CPU (at 10
			// RPS it did not, once in a loaded make test).
			out := sweepAtLowRate(t, tc.flavor, func(p *plan.Plan) {
				p.AttackSharePct, p.Measure, p.Ladder = 25, 4*time.Second, []int{40, 80}
				if !plan.IsBuiltIn(tc.flavor) {
					p.Modules = []moduleflavor.Spec{moduleFlavorOf(t, tc.flavor, requireModule(t), `{"directives": ["Include ${TIER_FILE}"]}`)}
				}
			})
			sw, err := dataset.ReadSweep(out)
			if err != nil {
				t.Fatal(err)
			}
			steps, members := sw.Steps, sw.Members
			var attackCalls int64
			for _, s := range steps {
				attackCalls += s.AttackCalls
				if s.AttackCalls == 0 || s.AttackMisses != 0 || s.BenignBlocked != 0 {
					t.Errorf("step at %d rps: %d attack calls in the window, %d missed, %d benign blocked",
						s.TargetRPS, s.AttackCalls, s.AttackMisses, s.BenignBlocked)
				}
			}
			attacks := 0
			for _, m := range members {
				if m.Role == dataset.RoleAttack {
					attacks++
					if m.WantStatus != tc.want || m.Misses != 0 {
						t.Errorf("attack %s: must get %d, %d missed; want %d, none", m.Member, m.WantStatus, m.Misses, tc.want)
					}
				}
			}
			if attacks == 0 {
				t.Fatal("members.csv has no attack")
			}
			served, marked := backendCounts(t, filepath.Join(out, "runs", "r0", tc.flavor, tc.tier, plan.ShapeGet, "backend.log"))
			switch {
			case served == 0:
				t.Error("the backend served nothing")
			case tc.want == 403 && marked != 0:
				t.Errorf("%d attacks reached the backend behind the WAF", marked)
			case tc.want == 200 && marked < attackCalls:
				t.Errorf("%d attacks reached the backend behind vanilla Envoy, fewer than the %d answered in the windows", marked, attackCalls)
			}
		})
	}
}

// backendCounts reads the backend's last log line: the requests it served
// and how many of them were marked as attacks.
func backendCounts(t *testing.T, path string) (served, marked int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	last := lines[len(lines)-1]
	if _, err := fmt.Sscanf(last, "backend: served %d requests, %d of them marked "+backend.HeaderAttack, &served, &marked); err != nil {
		t.Fatalf("%s: last line %q: %v", path, last, err)
	}
	return served, marked
}
