package nginxconfig

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/modsecrules"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// requireInstallation skips without nginx and the module, except under
// `make test` (WAFSWEEP_E2E=required), where their absence is a failure.
func requireInstallation(t *testing.T) Installation {
	t.Helper()
	inst, err := Find()
	if err != nil {
		if os.Getenv("WAFSWEEP_E2E") == "required" {
			t.Fatalf("real nginx + ModSecurity needed: %v", err)
		}
		t.Skipf("real nginx + ModSecurity needed: %v", err)
	}
	return inst
}

// Every rule tier, translated, is accepted by the real nginx and
// libmodsecurity3: `nginx -t` parses every rule file.
func TestEveryTierLoadsInModSecurity(t *testing.T) {
	inst := requireInstallation(t)
	rulesets, err := filepath.Abs(filepath.Join("..", "..", "rulesets"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tier := range plan.Tiers() {
		if tier == plan.TierModuleOff {
			continue // the corazawaf module's own tier: no rules to translate
		}
		t.Run(tier, func(t *testing.T) {
			dir := t.TempDir()
			cfg := modsecrules.FilterConfig{Directives: []string{"Include " + filepath.Join(rulesets, tier+".conf")}}
			if tier == plan.TierFullCRSAudit {
				cfg.AuditLog, cfg.AuditEngine = filepath.Join(dir, "audit.log"), "On"
			}
			rs, err := modsecrules.Write(filepath.Join(dir, "modsecurity"), cfg)
			if err != nil {
				t.Fatal(err)
			}
			o := baseOptions()
			o.ModulePath, o.RulesFile, o.RunDir = inst.Module, rs.MainFile, dir
			conf := filepath.Join(dir, "nginx.conf")
			if err := Write(conf, o); err != nil {
				t.Fatal(err)
			}
			if err := inst.Validate(context.Background(), conf, o.ErrorLog()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestValidateQuotesNginxsMessage(t *testing.T) {
	inst := requireInstallation(t)
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.conf")
	if err := os.WriteFile(rules, []byte("SecBogusDirective On\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := baseOptions()
	o.ModulePath, o.RulesFile, o.RunDir = inst.Module, rules, dir
	conf := filepath.Join(dir, "nginx.conf")
	if err := Write(conf, o); err != nil {
		t.Fatal(err)
	}
	err := inst.Validate(context.Background(), conf, o.ErrorLog())
	if err == nil || !strings.Contains(err.Error(), "rules.conf. Line: 1.") {
		t.Fatalf("err = %v, want ModSecurity's complaint naming the file and line", err)
	}
}

func TestVersion(t *testing.T) {
	inst := requireInstallation(t)
	if v := inst.Version(); !strings.HasPrefix(v, "nginx/") {
		t.Errorf("Version() = %q", v)
	}
}
