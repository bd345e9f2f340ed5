package local_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/sweep"
	"github.com/wafsweep/wafsweep/orchestrator/target"
	"github.com/wafsweep/wafsweep/orchestrator/target/local"
)

// moduleFlavorOf loads, as module flavor name, a spec of the corazawaf
// build at module written as any other module's would be: its own module
// name, the config of each tier built from the tier's file, and env.
func moduleFlavorOf(t *testing.T, name, module, config string, env ...string) moduleflavor.Spec {
	t.Helper()
	envJSON := `[]`
	if len(env) > 0 {
		envJSON = `["` + strings.Join(env, `","`) + `"]`
	}
	spec := `{"library": "` + module + `", "module_name": "any-module", "filter_name": "corazawaf", "config": ` + config + `, "env": ` + envJSON + `}`
	path := filepath.Join(t.TempDir(), name+".json")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := moduleflavor.Load(name, path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// moduleDeployment is what the sweep deploys for cfg of plan p.
func moduleDeployment(t *testing.T, p plan.Plan, cfg plan.Config, runDir string) target.Deployment {
	t.Helper()
	wafJSON, err := sweep.WAFConfig(p, cfg, filepath.Join(repoRoot(t), "rulesets"), "")
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := p.Module(cfg.Flavor)
	return target.Deployment{Config: cfg, WAFConfigJSON: wafJSON, RunDir: runDir, Module: &spec}
}

// A module flavor runs the library its spec names, under its module and
// filter names, with the tier's config and the spec's environment: here
// the corazawaf build as if it were any module, which blocks at full CRS
// what the built-in flavor blocks. GODEBUG=gctrace=1 in the spec shows
// the environment reached Envoy: the module's Go runtime then logs its
// collections.
func TestModuleFlavorRunsTheModuleOfItsSpec(t *testing.T) {
	module := requireModule(t)
	p := plan.Default()
	p.Modules = []moduleflavor.Spec{moduleFlavorOf(t, "any", module, `{"directives": ["Include ${TIER_FILE}"]}`, "GODEBUG=gctrace=1")}
	p.Flavors = []string{"any"}
	cfg := plan.Config{Flavor: "any", Tier: plan.TierFullCRS, Shape: plan.ShapeGet}
	tgt, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tgt.CheckModule(p); err != nil {
		t.Fatal(err)
	}
	runDir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	d, err := tgt.Deploy(ctx, moduleDeployment(t, p, cfg, runDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{"/api/orders?id=7", 200},
		{"/search?q=1%27%20or%201%3D1--", 403},
	} {
		if got := probe(t, d, "GET", c.path, "", ""); got != c.want {
			t.Errorf("GET %s: %d, want %d", c.path, got, c.want)
		}
	}
	if err := d.Teardown(); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(runDir, "envoy.json"))
	if err != nil {
		t.Fatal(err)
	}
	// protojson varies its whitespace on purpose: match the field, not the text.
	if !regexp.MustCompile(`"name":\s*"any-module"`).Match(config) || !strings.Contains(string(config), module) {
		t.Errorf("Envoy's config does not load %s as any-module:\n%s", module, config)
	}
	log, err := os.ReadFile(filepath.Join(runDir, "envoy.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^gc \d+ @`).Match(log) {
		t.Errorf("the spec's GODEBUG did not reach Envoy: no collection logged\n%s", log)
	}
}

// Envoy validates a module flavor's configs before a sweep starts: a
// config the module refuses fails with the module's own message, for
// each tier it breaks, and one it accepts passes.
func TestModuleFlavorConfigsAreValidatedByEnvoy(t *testing.T) {
	module := requireModule(t)
	tgt, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, config string
		want         []string // in the error; none: accepted
	}{
		{"the tier's rules", `{"directives": ["Include ${TIER_FILE}"]}`, nil},
		{"a bad directive", `{"directives": ["Include ${TIER_FILE}", "SecRuleEngine Sometimes"]}`,
			[]string{"module flavor any, tier targeted", "module flavor any, tier full-crs", `invalid rule engine status: "Sometimes"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan.Default()
			p.Modules = []moduleflavor.Spec{moduleFlavorOf(t, "any", module, tc.config)}
			p.Flavors, p.Tiers = []string{"any"}, []string{plan.TierTargeted, plan.TierFullCRS}
			err := sweep.CheckModuleConfigs(t.Context(), sweep.Options{Plan: p, Target: tgt, RulesetsDir: filepath.Join(repoRoot(t), "rulesets")})
			if len(tc.want) == 0 && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if len(tc.want) > 0 && err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want %q in it", err, w)
				}
			}
		})
	}
}
