package local_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/target"
	"github.com/wafsweep/wafsweep/orchestrator/target/local"
)

// The target's backend as its own process is this test binary.
func TestMain(m *testing.M) {
	backend.ServeIfHelper()
	os.Exit(m.Run())
}

// The count a step's load generator count is checked against is what the
// server measured served: the backend's own for the direct flavor (in this
// process or as its own), nginx's stub_status for nginx (less its own
// reads), Envoy's counter for Envoy.
func TestProxyCountsWhatItServed(t *testing.T) {
	t.Setenv(backend.HelperProcessEnv, "1")
	for _, tc := range []struct {
		name    string
		flavor  string
		command []string
	}{
		{"direct in process", plan.FlavorDirect, nil},
		{"direct own process", plan.FlavorDirect, []string{os.Args[0]}},
		{"nginx", plan.FlavorNginxModSecurity, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := plan.Config{Flavor: tc.flavor, Tier: plan.TierNone, Shape: plan.ShapeGet}
			if tc.flavor == plan.FlavorNginxModSecurity {
				requireNginx(t)
				cfg.Tier = plan.TierHeadersOnly
			}
			d, _, _ := deploy(t, local.Options{BackendCommand: tc.command}, cfg)
			counter, ok := d.(target.ProxyCounter)
			if !ok {
				t.Fatal("the deployment counts nothing")
			}
			before, err := counter.ProxyCompleted()
			if err != nil {
				t.Fatal(err)
			}
			const sent = 7
			for range sent {
				resp, err := http.Get(d.URL() + "/")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			after, err := counter.ProxyCompleted()
			if err != nil || after-before != sent {
				t.Errorf("counted %d requests (%v), want %d", after-before, err, sent)
			}
		})
	}
}
