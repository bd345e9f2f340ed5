package plan

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Validate returns every problem of the plan at once (joined with
// errors.Join), each message saying how to fix it, or nil.
func (p Plan) Validate() error {
	var errs []error
	errs = append(errs, checkNames("flavor", p.Flavors, p.knownFlavors())...)
	errs = append(errs, p.checkModules()...)
	errs = append(errs, p.checkTiers()...)
	errs = append(errs, p.checkShapes()...)
	errs = append(errs, p.checkLadder()...)
	errs = append(errs, p.checkFloor()...)
	errs = append(errs, p.checkRun()...)
	errs = append(errs, checkEnvoyEnv(p.EnvoyEnv)...)
	errs = append(errs, p.checkAuditLog()...)
	errs = append(errs, p.checkTransport()...)
	errs = append(errs, p.checkAttackShare()...)
	return errors.Join(errs...)
}

// checkAuditLog refuses an audit log no configuration would write.
func (p Plan) checkAuditLog() []error {
	if !p.AuditLog {
		return nil
	}
	var errs []error
	if !slices.ContainsFunc(p.Flavors, HasWAF) {
		errs = append(errs, fmt.Errorf("audit_log: no flavor has a WAF to write it: add %s, %s or %s",
			FlavorWAF, FlavorWAFAccelerated, FlavorNginxModSecurity))
	}
	if slices.Contains(p.Tiers, TierModuleOff) {
		errs = append(errs, fmt.Errorf("audit_log: tier %s inspects nothing, so it logs nothing: sweep it without the audit log", TierModuleOff))
	}
	return errs
}

// Audits reports whether cfg writes an audit log: its tier always does
// (full-crs-audit), or the plan asks every WAF configuration to.
func (p Plan) Audits(cfg Config) bool {
	if !HasWAF(cfg.Flavor) || cfg.Tier == TierModuleOff {
		return false
	}
	return p.AuditLog || cfg.Tier == TierFullCRSAudit
}

// checkNames reports an empty list, unknown names and duplicates.
func checkNames(kind string, names, known []string) []error {
	if len(names) == 0 {
		return []error{fmt.Errorf("no %ss: list at least one of %s", kind, oneOf(known))}
	}
	var errs []error
	seen := map[string]bool{}
	for _, n := range names {
		switch {
		case !slices.Contains(known, n):
			errs = append(errs, fmt.Errorf("unknown %s %q: use one of %s", kind, n, oneOf(known)))
		case seen[n]:
			errs = append(errs, fmt.Errorf("%s %q listed twice: remove the duplicate", kind, n))
		}
		seen[n] = true
	}
	return errs
}

// checkShapes is checkNames for shapes, with a mix checked member by
// member (see MixPrefix).
func (p Plan) checkShapes() []error {
	var plain []string
	var errs []error
	seen := map[string]bool{}
	for _, s := range p.Shapes {
		if !IsMix(s) {
			plain = append(plain, s)
			continue
		}
		if _, err := parseMix(s); err != nil {
			errs = append(errs, err)
		}
		if seen[s] {
			errs = append(errs, fmt.Errorf("shape %q listed twice: remove the duplicate", s))
		}
		seen[s] = true
	}
	if len(plain) > 0 || len(p.Shapes) == 0 {
		errs = append(errs, checkNames("shape", plain, Shapes())...)
	}
	return errs
}

func (p Plan) checkTiers() []error {
	var errs []error
	var requested []string
	for _, t := range p.Tiers {
		if t == TierNone {
			errs = append(errs, fmt.Errorf("tier %q is implied for the flavors without a WAF (%s, %s, %s): remove it from tiers",
				TierNone, FlavorDirect, FlavorEnvoy, FlavorEnvoyNoopModule))
			continue
		}
		requested = append(requested, t)
	}
	if len(requested) == 0 && !slices.ContainsFunc(p.Flavors, HasWAF) {
		return errs // no WAF flavor: no tier needed
	}
	if slices.Contains(requested, TierModuleOff) && slices.Contains(p.Flavors, FlavorNginxModSecurity) {
		errs = append(errs, fmt.Errorf("tier %s is the corazawaf module's (flavors %s, %s), not %s's: sweep it apart from %s",
			TierModuleOff, FlavorWAF, FlavorWAFAccelerated, FlavorNginxModSecurity, FlavorNginxModSecurity))
	}
	return append(errs, checkNames("tier", requested, Tiers())...)
}

func (p Plan) checkLadder() []error {
	if len(p.Ladder) == 0 {
		return []error{errors.New("empty ladder: list target rates, e.g. [1000, 2000, 4000]")}
	}
	var errs []error
	for i, r := range p.Ladder {
		if r <= 0 {
			errs = append(errs, fmt.Errorf("ladder[%d] = %d: rates must be positive", i, r))
		}
		if i > 0 && r <= p.Ladder[i-1] {
			errs = append(errs, fmt.Errorf("ladder[%d] = %d is not above ladder[%d] = %d: sort the ladder strictly ascending without repeats", i, r, i-1, p.Ladder[i-1]))
		}
	}
	if p.Connections <= 0 {
		errs = append(errs, fmt.Errorf("connections = %d: use a positive number (64 is the reference)", p.Connections))
	}
	return errs
}

// checkFloor checks the descent below the ladder: the floor must be below
// the ladder's first rate, and a step at the floor must still give every
// connection at least 2 calls in the window.
func (p Plan) checkFloor() []error {
	if p.FloorRPS == 0 {
		return nil
	}
	first := 0
	if len(p.Ladder) > 0 {
		first = p.Ladder[0]
	}
	if p.FloorRPS < 0 || (first > 0 && p.FloorRPS >= first) {
		fix := "set floor_rps to 0 to turn the descent below the ladder off"
		if first > 1 {
			fix = fmt.Sprintf("set floor_rps between 1 and %d (below the ladder's first rate %d), or to 0 to turn the descent below the ladder off", first-1, first)
		}
		return []error{fmt.Errorf("floor_rps = %d: %s", p.FloorRPS, fix)}
	}
	if p.Connections <= 0 || p.Measure < time.Second {
		return nil // reported by checkLadder and checkRun
	}
	const minCallsPerConn = 2
	conns := p.ConnectionsFor(p.FloorRPS)
	calls := int64(float64(p.FloorRPS) * p.Measure.Seconds())
	if need := int64(minCallsPerConn * conns); calls < need {
		return []error{fmt.Errorf("floor_rps = %d with measure = %s schedules %d calls, fewer than %d per connection over %d connections: raise floor_rps to at least %d, or lengthen measure to at least %s",
			p.FloorRPS, p.Measure, calls, minCallsPerConn, conns, int(math.Ceil(float64(need)/p.Measure.Seconds())),
			time.Duration(math.Ceil(float64(need)/float64(p.FloorRPS)))*time.Second)}
	}
	return nil
}

func (p Plan) checkRun() []error {
	var errs []error
	if p.Warmup < 0 {
		errs = append(errs, fmt.Errorf("warmup = %s: use zero or a positive duration", p.Warmup))
	}
	if p.Measure < time.Second {
		errs = append(errs, fmt.Errorf("measure = %s: use at least 1s", p.Measure))
	}
	if p.Cooldown < 0 {
		errs = append(errs, fmt.Errorf("cooldown = %s: use zero or a positive duration", p.Cooldown))
	}
	if p.Rounds < 1 {
		errs = append(errs, fmt.Errorf("rounds = %d: use 1 or more", p.Rounds))
	}
	if !(p.MaxLoadgenCPU > 0 && p.MaxLoadgenCPU <= 1) {
		errs = append(errs, fmt.Errorf("max_loadgen_cpu = %g: use a fraction in (0, 1], e.g. 0.70", p.MaxLoadgenCPU))
	}
	if !(p.KneeResolution >= 0.005 && p.KneeResolution <= 0.05) {
		errs = append(errs, fmt.Errorf("knee_resolution = %g: use a fraction in [0.005, 0.05] (5%% is the reference)", p.KneeResolution))
	}
	if !(p.MaxCPUSteal > 0 && p.MaxCPUSteal <= 1) {
		errs = append(errs, fmt.Errorf("max_cpu_steal = %g: use a fraction of a CPU in (0, 1], e.g. 0.02", p.MaxCPUSteal))
	}
	if !(p.MaxLoadgenLateness > 0 && p.MaxLoadgenLateness <= 1) {
		errs = append(errs, fmt.Errorf("max_loadgen_lateness = %g: use a fraction in (0, 1], e.g. 0.25", p.MaxLoadgenLateness))
	}
	if p.MaxLoadgenDelay <= 0 {
		errs = append(errs, fmt.Errorf("max_loadgen_delay = %s: use a positive duration, e.g. 10ms", p.MaxLoadgenDelay))
	}
	if !p.SLORule.valid() {
		errs = append(errs, fmt.Errorf("slo_rule = %q: use %q (or %q, to replay sweeps made before the rule existed)", p.SLORule, SLOEveryRun, SLOLastRun))
	}
	for i, slo := range p.SLOs {
		if slo <= 0 || slices.Contains(p.SLOs[:i], slo) {
			errs = append(errs, fmt.Errorf("slos: %s: use distinct positive durations, e.g. 10ms,50ms,250ms", slo))
		}
	}
	return errs
}
