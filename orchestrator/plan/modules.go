package plan

import (
	"fmt"
	"slices"

	"github.com/wafsweep/wafsweep/orchestrator/internal/envvars"

	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
)

// IsBuiltIn reports whether flavor is one wafsweep knows by name. Any
// other flavor of a valid plan is a module flavor it declares (Modules):
// an Envoy dynamic module, a WAF whose tiers its spec maps onto its
// config.
func IsBuiltIn(flavor string) bool { return slices.Contains(Flavors(), flavor) }

// Module is the spec of a module flavor of the plan.
func (p Plan) Module(flavor string) (moduleflavor.Spec, bool) {
	i := slices.IndexFunc(p.Modules, func(s moduleflavor.Spec) bool { return s.Name == flavor })
	if i < 0 {
		return moduleflavor.Spec{}, false
	}
	return p.Modules[i], true
}

// knownFlavors are the flavors a plan may list: the built-in ones and its
// module flavors.
func (p Plan) knownFlavors() []string {
	known := Flavors()
	for _, s := range p.Modules {
		known = append(known, s.Name)
	}
	return known
}

// checkModules checks each module flavor's spec, that its name is its
// own, that it is swept, and that the plan asks of it only what a spec
// can give: a tier it has a config for, no audit log (a spec cannot say
// where its module writes one), no variable of Envoy's environment that
// the plan sets too.
func (p Plan) checkModules() []error {
	var errs []error
	seen := map[string]bool{}
	for _, s := range p.Modules {
		switch {
		case IsBuiltIn(s.Name):
			errs = append(errs, fmt.Errorf("module flavor %s: %s is a built-in flavor: name the module otherwise", s.Name, s.Name))
		case seen[s.Name]:
			errs = append(errs, fmt.Errorf("module flavor %s declared twice: keep one", s.Name))
		case !slices.Contains(p.Flavors, s.Name):
			errs = append(errs, fmt.Errorf("module flavor %s is declared but not swept: add it to flavors", s.Name))
		}
		seen[s.Name] = true
		if err := s.Check(); err != nil {
			errs = append(errs, err)
		}
		if slices.Contains(p.Tiers, TierModuleOff) && !s.HasTierConfig(TierModuleOff) {
			errs = append(errs, fmt.Errorf("module flavor %s has no config for tier %s: give it one in tier_configs, or sweep that tier apart", s.Name, TierModuleOff))
		}
		if p.AuditLog || slices.Contains(p.Tiers, TierFullCRSAudit) {
			errs = append(errs, fmt.Errorf("module flavor %s cannot be told where to write an audit log: sweep it without audit_log and tier %s", s.Name, TierFullCRSAudit))
		}
		planned := envvars.Names(p.EnvoyEnv)
		for _, name := range envvars.Names(s.Env) {
			if slices.Contains(planned, name) {
				errs = append(errs, fmt.Errorf("module flavor %s sets %s, which envoy_env sets too: keep one", s.Name, name))
			}
		}
	}
	return errs
}
