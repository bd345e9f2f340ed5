package precheck

import (
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

func TestChecksPerTier(t *testing.T) {
	tests := []struct {
		cfg         plan.Config
		wantAttacks []string
	}{
		{plan.Config{Flavor: "envoy", Tier: "none", Shape: "get"}, nil},
		{plan.Config{Flavor: "direct", Tier: "none", Shape: "json_1k"}, nil},
		{plan.Config{Flavor: "waf", Tier: "headers-only", Shape: "get"}, []string{"admin path", "scanner user agent"}},
		{plan.Config{Flavor: "waf", Tier: "targeted", Shape: "json_1k"}, []string{"admin path", "scanner user agent", "SQLi in the query",
			"SQLi in a JSON body", "XSS in a JSON body", "known payload in a JSON field"}},
		{plan.Config{Flavor: "waf", Tier: "full-crs-pl2", Shape: "get"}, []string{"scanner user agent", "SQLi in the query",
			"SQLi in a JSON body", "XSS in a JSON body"}},
	}
	for _, tt := range tests {
		t.Run(tt.cfg.ID(), func(t *testing.T) {
			checks, err := Checks(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(checks) == 0 || checks[0].WantStatus != 200 || checks[0].Name != "benign "+tt.cfg.Shape {
				t.Fatalf("first check must be the benign shape: %+v", checks)
			}
			var attacks []string
			for _, c := range checks[1:] {
				if c.WantStatus != 403 {
					t.Errorf("attack %q expects %d", c.Name, c.WantStatus)
				}
				attacks = append(attacks, c.Name)
			}
			if len(attacks) != len(tt.wantAttacks) {
				t.Fatalf("attacks %v, want %v", attacks, tt.wantAttacks)
			}
			for i := range attacks {
				if attacks[i] != tt.wantAttacks[i] {
					t.Fatalf("attacks %v, want %v", attacks, tt.wantAttacks)
				}
			}
		})
	}
	if _, err := Checks(plan.Config{Flavor: "waf", Tier: "full-crs", Shape: "xml"}); err == nil {
		t.Fatal("an unknown shape must be an error")
	}
}

// The module with mode off and the no-op module inspect nothing: their
// pre-check proves it with an attack every tier blocks, which must pass.
func TestUninspectedConfigsLetAnAttackThrough(t *testing.T) {
	for _, cfg := range []plan.Config{
		{Flavor: plan.FlavorWAF, Tier: plan.TierModuleOff, Shape: plan.ShapeGet},
		{Flavor: plan.FlavorEnvoyNoopModule, Tier: plan.TierNone, Shape: plan.ShapeGet},
	} {
		checks, err := Checks(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(checks) != 2 || checks[1].Name != "scanner user agent" || checks[1].WantStatus != 200 {
			t.Errorf("%s: checks %+v, want the benign shape and the scanner let through", cfg.ID(), checks)
		}
	}
}

// A mix's pre-check sends each member's benign request.
func TestChecksOfAMixSendEachMember(t *testing.T) {
	checks, err := Checks(plan.Config{Flavor: "envoy", Tier: "none", Shape: "mix:get=60,json_10k=40"})
	if err != nil {
		t.Fatal(err)
	}
	json10k, _ := plan.ShapeByName(plan.ShapeJSON10K)
	if len(checks) != 2 || checks[0].Name != "benign get" || checks[0].Method != "GET" ||
		checks[1].Name != "benign json_10k" || string(checks[1].Body) != string(json10k.Body) {
		t.Errorf("checks %+v: want the benign get and json_10k", checks)
	}
}

// Under load a configuration that inspects is sent its tier family's
// attacks, to be blocked; one that inspects nothing is sent every attack,
// to be passed.
func TestAttacksUnderLoad(t *testing.T) {
	for _, tc := range []struct {
		cfg    plan.Config
		n      int
		status int
	}{
		{plan.Config{Flavor: plan.FlavorWAF, Tier: plan.TierFullCRS, Shape: plan.ShapeGet}, 4, 403},
		{plan.Config{Flavor: plan.FlavorNginxModSecurity, Tier: plan.TierFullCRSAudit, Shape: plan.ShapeGet}, 4, 403},
		{plan.Config{Flavor: plan.FlavorWAFAccelerated, Tier: plan.TierHeadersOnly, Shape: plan.ShapeGet}, 2, 403},
		{plan.Config{Flavor: plan.FlavorWAF, Tier: plan.TierTargeted, Shape: plan.ShapeGet}, 6, 403},
		{plan.Config{Flavor: plan.FlavorEnvoy, Tier: plan.TierNone, Shape: plan.ShapeGet}, 6, 200},
		{plan.Config{Flavor: plan.FlavorWAF, Tier: plan.TierModuleOff, Shape: plan.ShapeGet}, 6, 200},
	} {
		got := Attacks(tc.cfg)
		if len(got) != tc.n {
			t.Errorf("%s: %d attacks, want %d", tc.cfg.ID(), len(got), tc.n)
		}
		for _, c := range got {
			if c.WantStatus != tc.status {
				t.Errorf("%s: %s must get %d, want %d", tc.cfg.ID(), c.Name, c.WantStatus, tc.status)
			}
		}
	}
}
