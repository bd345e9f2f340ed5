package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/target"
)

// moduleOf is the spec of cfg's module flavor, nil for a built-in flavor.
func moduleOf(p plan.Plan, cfg plan.Config) *moduleflavor.Spec {
	if spec, ok := p.Module(cfg.Flavor); ok {
		return &spec
	}
	return nil
}

// CheckModuleConfigs has the target validate the config of every module
// flavor's configurations (each tier of the plan) before anything starts:
// the module loads in the target's Envoy and accepts its config, or the
// sweep does not start, with the module's own message. Targets that cannot
// validate (target.ConfigValidator) are not asked.
func CheckModuleConfigs(ctx context.Context, opts Options) error {
	v, ok := opts.Target.(target.ConfigValidator)
	if !ok || len(opts.Plan.Modules) == 0 {
		return nil
	}
	dir, err := os.MkdirTemp("", "wafsweep-validate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var errs []error
	done := map[string]bool{} // flavor/tier: the config is the tier's, whatever the shape
	for _, cfg := range opts.Plan.Configs() {
		key := cfg.Flavor + "/" + cfg.Tier
		if _, ok := opts.Plan.Module(cfg.Flavor); !ok || done[key] {
			continue
		}
		done[key] = true
		errs = append(errs, validateModuleConfig(ctx, v, opts, cfg, filepath.Join(dir, cfg.Flavor+"-"+cfg.Tier)))
	}
	return errors.Join(errs...)
}

func validateModuleConfig(ctx context.Context, v target.ConfigValidator, opts Options, cfg plan.Config, runDir string) error {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}
	wafJSON, err := WAFConfig(opts.Plan, cfg, opts.RulesetsDir, "")
	if err != nil {
		return err
	}
	err = v.ValidateConfig(ctx, target.Deployment{Config: cfg, WAFConfigJSON: wafJSON, RunDir: runDir,
		Module: moduleOf(opts.Plan, cfg), Protocol: opts.Plan.Protocol})
	if err != nil {
		return fmt.Errorf("module flavor %s, tier %s: %w", cfg.Flavor, cfg.Tier, err)
	}
	return nil
}
