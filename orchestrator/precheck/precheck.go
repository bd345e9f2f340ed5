// Package precheck verifies a deployed configuration before it is measured:
// benign requests of every shape must get 200, and for blocking tiers a set
// of attacks (in the URI, in headers and inside JSON bodies) must get 403.
// A configuration that fails is not measured: its numbers would describe a
// WAF that does not do its job, or a proxy that rejects the traffic.
package precheck

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// Check is one request and the status it must get.
type Check struct {
	Name        string
	Method      string
	Path        string
	ContentType string
	Body        []byte
	Headers     map[string]string
	WantStatus  int
}

// BlockStatus is what a WAF answers a request it blocks: every attack of a
// tier that inspects must get it, and no benign request may.
const BlockStatus = 403

// attack is a request a tier family must block.
type attack struct {
	check    Check
	families []string // tier families that block it
}

var attacks = []attack{
	{Check{Name: "admin path", Method: "GET", Path: "/admin/settings"}, []string{"headers-only", "targeted"}},
	{Check{Name: "scanner user agent", Method: "GET", Path: "/", Headers: map[string]string{"User-Agent": "sqlmap/1.8 (https://sqlmap.org)"}},
		[]string{"headers-only", "targeted", "full-crs"}},
	{Check{Name: "SQLi in the query", Method: "GET", Path: "/search?q=1%27%20or%201%3D1--"}, []string{"targeted", "full-crs"}},
	{Check{Name: "SQLi in a JSON body", Method: "POST", Path: "/api/orders", ContentType: "application/json",
		Body: []byte(`{"order":{"id":7,"note":"1' union select password from users--"}}`)}, []string{"targeted", "full-crs"}},
	{Check{Name: "XSS in a JSON body", Method: "POST", Path: "/api/comments", ContentType: "application/json",
		Body: []byte(`{"comment":{"text":"<script>alert(document.cookie)</script>"}}`)}, []string{"targeted", "full-crs"}},
	{Check{Name: "known payload in a JSON field", Method: "POST", Path: "/api/orders", ContentType: "application/json",
		Body: []byte(`{"payload":"maliciouspayload"}`)}, []string{"targeted"}},
}

// Family is the rule-set family of a tier: full-crs variants block what
// full-crs blocks.
func Family(tier string) string {
	if strings.HasPrefix(tier, "full-crs") {
		return "full-crs"
	}
	return tier
}

// Checks lists what a configuration must pass: its shape benign (each
// member of a mix), and the attacks its tier blocks when the flavor has a
// WAF.
func Checks(cfg plan.Config) ([]Check, error) {
	var checks []Check
	shape, err := plan.ShapeByName(cfg.Shape)
	if err != nil {
		return nil, err
	}
	members := shape.Members // a mix sends each of them
	if members == nil {
		members = []plan.Member{{Shape: shape, Weight: 1}}
	}
	for _, m := range members {
		checks = append(checks, Check{Name: "benign " + m.Shape.Name, Method: m.Shape.Method, Path: "/api/orders",
			ContentType: m.Shape.ContentType, Body: m.Shape.Body, WantStatus: 200})
	}
	if cfg.Tier == plan.TierModuleOff || cfg.Flavor == plan.FlavorEnvoyNoopModule {
		// Proof that the module inspects nothing: an attack every tier
		// blocks passes.
		c := attacks[1].check
		c.WantStatus = 200
		return append(checks, c), nil
	}
	if !inspects(cfg) {
		return checks, nil
	}
	return append(checks, Attacks(cfg)...), nil
}

// Attacks are the requests sent as attacks under load (a plan's attack
// share), with the status each must get. A configuration that inspects
// gets its tier family's attacks, to be blocked (403). One that inspects
// nothing (no WAF, tier module-off, the no-op module) gets every attack,
// to be passed to the backend (200): its traffic is then the same kind as
// the WAF flavors', attacks included.
func Attacks(cfg plan.Config) []Check {
	var out []Check
	family := Family(cfg.Tier)
	for _, a := range attacks {
		c := a.check
		switch {
		case !inspects(cfg):
			c.WantStatus = 200
		case slices.Contains(a.families, family):
			c.WantStatus = BlockStatus
		default:
			continue
		}
		out = append(out, c)
	}
	return out
}

// inspects reports whether a configuration runs rules on its traffic.
func inspects(cfg plan.Config) bool {
	return plan.HasWAF(cfg.Flavor) && cfg.Tier != plan.TierModuleOff && cfg.Flavor != plan.FlavorEnvoyNoopModule
}

// Run sends every check to base.URL (http://127.0.0.1:PORT, or https://),
// with base's Host and over base's transport (HTTP2, CAFile), the one the
// load will use: a WAF that blocks over HTTP/1.1 but not over HTTP/2 fails
// here. It returns one error naming each check that got another status,
// or was answered over another protocol.
func Run(ctx context.Context, base loadgen.Spec, checks []Check) error {
	var errs []error
	for _, c := range checks {
		spec := base
		spec.URL, spec.Method, spec.ContentType, spec.Body, spec.Headers = base.URL+c.Path, c.Method, c.ContentType, c.Body, c.Headers
		status, _, _, err := loadgen.Probe(ctx, spec)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", c.Name, err))
		case status != c.WantStatus:
			errs = append(errs, fmt.Errorf("%s: got %d, want %d", c.Name, status, c.WantStatus))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("pre-check failed: %w", errors.Join(errs...))
	}
	return nil
}
