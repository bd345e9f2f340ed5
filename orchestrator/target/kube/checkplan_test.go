package kube

import (
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// What the Kubernetes targets cannot run is refused before anything is
// built or deployed, every problem at once.
func TestCheckPlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(*plan.Plan)
		wantErr []string
	}{
		{"the default plan", func(*plan.Plan) {}, nil},
		{"nginx", func(p *plan.Plan) { p.Flavors = append(p.Flavors, plan.FlavorNginxModSecurity) }, []string{"flavors nginx-modsecurity"}},
		{"h2 over TLS", func(p *plan.Plan) { p.Protocol, p.TLS = plan.ProtocolH2, true }, nil},
		{"a mix and attacks", func(p *plan.Plan) { p.Shapes, p.AttackSharePct = []string{"get", "mix:get=1,json_1k=1"}, 1 }, nil},
		{"TLS and nginx", func(p *plan.Plan) {
			p.TLS = true
			p.Flavors = append(p.Flavors, plan.FlavorNginxModSecurity)
		}, []string{"flavors nginx-modsecurity"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan.Default()
			tc.change(&p)
			err := CheckPlan(p)
			if (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want it to name %q", err, want)
				}
			}
		})
	}
}
