package plan

import (
	"slices"
	"strings"
)

// Flavors: what sits between the load generator and the backend.
const (
	FlavorDirect           = "direct"            // load generator straight to the backend
	FlavorEnvoy            = "envoy"             // vanilla Envoy, no WAF: the baseline for WAF cost
	FlavorEnvoyNoopModule  = "envoy-noop-module" // Envoy + a module that does nothing (filter/noopmodule): Envoy's share of a module's cost
	FlavorWAF              = "waf"               // Envoy + corazawaf
	FlavorWAFAccelerated   = "waf-accelerated"   // Envoy + accelerated corazawaf build
	FlavorNginxModSecurity = "nginx-modsecurity" // nginx + ModSecurity, for comparison
)

// Tiers: how much of the rule set is loaded. They only apply to WAF flavors.
const (
	TierNone = "none" // the only tier of flavors without a WAF
	// TierModuleOff loads the module with mode off and no rule: what the
	// module costs in front of a stream before Coraza runs at all. Only
	// the module's flavors have it.
	TierModuleOff    = "module-off"
	TierHeadersOnly  = "headers-only"
	TierTargeted     = "targeted"
	TierFullCRS      = "full-crs"
	TierFullCRSPL1   = "full-crs-pl1"
	TierFullCRSPL2   = "full-crs-pl2"
	TierFullCRSPL3   = "full-crs-pl3"
	TierFullCRSPL4   = "full-crs-pl4"
	TierFullCRSAudit = "full-crs-audit"
)

// Shapes: the request sent at every step.
const (
	ShapeGet      = "get"
	ShapeJSON1K   = "json_1k"
	ShapeJSON10K  = "json_10k"
	ShapeJSON50K  = "json_50k"
	jsonMediaType = "application/json"
)

// Flavors lists every known flavor in the canonical (report) order.
func Flavors() []string {
	return []string{FlavorDirect, FlavorEnvoy, FlavorEnvoyNoopModule, FlavorWAF, FlavorWAFAccelerated, FlavorNginxModSecurity}
}

// Tiers lists every WAF tier in the canonical order (TierNone excluded: it is
// implied for flavors without a WAF and never requested in a plan).
func Tiers() []string {
	return []string{
		TierModuleOff, TierHeadersOnly, TierTargeted, TierFullCRS,
		TierFullCRSPL1, TierFullCRSPL2, TierFullCRSPL3, TierFullCRSPL4, TierFullCRSAudit,
	}
}

// Shapes lists every request shape in the canonical order (by body size).
func Shapes() []string {
	return []string{ShapeGet, ShapeJSON1K, ShapeJSON10K, ShapeJSON50K}
}

// HasWAF reports whether tiers apply to the flavor: corazawaf's builds,
// nginx with ModSecurity, and every module flavor (see IsBuiltIn).
func HasWAF(flavor string) bool {
	switch flavor {
	case FlavorWAF, FlavorWAFAccelerated, FlavorNginxModSecurity:
		return true
	}
	return !IsBuiltIn(flavor)
}

// RunsEnvoy reports whether the flavor's proxy is Envoy.
func RunsEnvoy(flavor string) bool {
	return flavor == FlavorEnvoy || LoadsModule(flavor)
}

// LoadsModule reports whether the flavor's Envoy loads a dynamic module:
// one of corazawaf's builds, the no-op module, or a module flavor's.
func LoadsModule(flavor string) bool {
	switch flavor {
	case FlavorEnvoyNoopModule, FlavorWAF, FlavorWAFAccelerated:
		return true
	}
	return !IsBuiltIn(flavor)
}

// IsFlavor reports whether name is a known flavor.
func IsFlavor(name string) bool { return slices.Contains(Flavors(), name) }

// IsTier reports whether name is a WAF tier; false for TierNone, which a plan
// never asks for.
func IsTier(name string) bool { return slices.Contains(Tiers(), name) }

// IsShape reports whether name is a known shape.
func IsShape(name string) bool { return slices.Contains(Shapes(), name) }

// oneOf renders a list of names for "use one of ..." hints.
func oneOf(names []string) string { return strings.Join(names, ", ") }

// UnauditedTier is the tier an audit-log tier adds its log to: full-crs
// for full-crs-audit. Other tiers have none.
func UnauditedTier(tier string) (string, bool) {
	if tier == TierFullCRSAudit {
		return TierFullCRS, true
	}
	return "", false
}
