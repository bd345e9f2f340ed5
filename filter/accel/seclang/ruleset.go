package seclang

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// RuleSet is the rule list Coraza ends up with after reading a set of
// directives: top-level rules in evaluation order (chain members hang off
// their parent), with removals applied, and a record of what the
// update directives touched.
type RuleSet struct {
	Rules []*Rule
	// TargetsAdded holds rules whose targets an update directive extended
	// (a target that is not a negation).
	TargetsAdded map[int]bool
	// TargetsNarrowed holds rules that only got negated targets added.
	TargetsNarrowed map[int]bool
	// UpdatedActions holds, for each rule SecRuleUpdateActionById changed,
	// the actions the updates gave it, in order.
	UpdatedActions map[int][]Action
	// ResponseBodyAccess is the last SecResponseBodyAccess (Coraza's
	// default: off).
	ResponseBodyAccess bool
	// DefaultActions are the actions of every SecDefaultAction, in order;
	// Coraza gives them to each rule of their phase.
	DefaultActions []Action
	// IgnoresCompilationErrors is set by SecIgnoreRuleCompilationErrors On:
	// Coraza then drops rules it cannot build, which this package cannot
	// predict, so the rule list may not be Coraza's.
	IgnoresCompilationErrors bool
}

// Parse applies the directives in order.
func Parse(directives []Directive) (*RuleSet, error) {
	rs := &RuleSet{TargetsAdded: map[int]bool{}, TargetsNarrowed: map[int]bool{}, UpdatedActions: map[int][]Action{}}
	var chainParent *Rule
	for _, d := range directives {
		var err error
		switch d.Name {
		case "secrule", "secaction":
			var r *Rule
			if d.Name == "secrule" {
				r, err = ParseSecRule(d)
			} else {
				r, err = ParseSecAction(d)
			}
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", d.File, d.Line, err)
			}
			if chainParent != nil {
				// Chain members take no id and no phase of their own.
				r.ID, r.Phase = 0, 0
				chainParent.Chain = append(chainParent.Chain, r)
				if !r.Chained() {
					chainParent = nil
				}
				continue
			}
			rs.Rules = append(rs.Rules, r)
			if r.Chained() {
				chainParent = r
			}
		case "secmarker":
			rs.Rules = append(rs.Rules, &Rule{Marker: strings.Trim(d.Args, `"`), Directive: d})
		case "secruleremovebyid":
			err = rs.forIDs(strings.Fields(d.Args), func(lo, hi int) { rs.removeRange(lo, hi) })
		case "secruleremovebytag":
			rs.remove(func(r *Rule) bool { return slices.Contains(r.Tags, d.Args) })
		case "secruleremovebymsg":
			rs.remove(func(r *Rule) bool { return r.Msg == d.Args })
		case "secruleupdatetargetbyid":
			fields := strings.Fields(d.Args)
			if len(fields) < 2 {
				return nil, fmt.Errorf("%s:%d: %w: SecRuleUpdateTargetById needs ids and targets", d.File, d.Line, errSyntax)
			}
			targets := strings.Trim(fields[len(fields)-1], `"`)
			err = rs.forIDs(fields[:len(fields)-1], func(lo, hi int) {
				rs.markTargets(func(r *Rule) bool { return r.ID >= lo && r.ID <= hi }, targets)
			})
		case "secruleupdatetargetbytag":
			fields := strings.Fields(d.Args)
			if len(fields) != 2 {
				return nil, fmt.Errorf("%s:%d: %w: SecRuleUpdateTargetByTag needs a tag and targets", d.File, d.Line, errSyntax)
			}
			tag, targets := strings.Trim(fields[0], `"`), strings.Trim(fields[1], `"`)
			rs.markTargets(func(r *Rule) bool { return slices.Contains(r.Tags, tag) }, targets)
		case "secruleupdateactionbyid":
			fields := strings.Fields(d.Args)
			if len(fields) < 2 {
				return nil, fmt.Errorf("%s:%d: %w: SecRuleUpdateActionById needs ids and actions", d.File, d.Line, errSyntax)
			}
			var actions []Action
			if actions, err = ParseActions(maybeRemoveQuotes(fields[len(fields)-1])); err != nil {
				break
			}
			err = rs.forIDs(fields[:len(fields)-1], func(lo, hi int) {
				for _, r := range rs.Rules {
					if r.ID >= lo && r.ID <= hi && r.ID != 0 {
						rs.UpdatedActions[r.ID] = append(rs.UpdatedActions[r.ID], actions...)
					}
				}
			})
		case "secdefaultaction":
			var actions []Action
			if actions, err = ParseActions(maybeRemoveQuotes(d.Args)); err == nil {
				rs.DefaultActions = append(rs.DefaultActions, actions...)
			}
		case "secresponsebodyaccess":
			rs.ResponseBodyAccess = strings.EqualFold(strings.TrimSpace(d.Args), "on")
		case "secignorerulecompilationerrors":
			rs.IgnoresCompilationErrors = strings.EqualFold(strings.TrimSpace(d.Args), "on")
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", d.File, d.Line, err)
		}
	}
	return rs, nil
}

// forIDs calls f with each id ("5") or inclusive range ("1-9") as bounds.
func (rs *RuleSet) forIDs(fields []string, f func(lo, hi int)) error {
	for _, field := range fields {
		lo, hi, isRange := strings.Cut(field, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return fmt.Errorf("%w: rule id %q", errSyntax, field)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return fmt.Errorf("%w: rule id range %q", errSyntax, field)
			}
		}
		f(a, b)
	}
	return nil
}

// Actions are a rule's actions followed by those SecRuleUpdateActionById
// gave it.
func (rs *RuleSet) Actions(r *Rule) []Action {
	return slices.Concat(r.Actions, rs.UpdatedActions[r.ID])
}

// HasAction reports whether a rule, as updated, carries an action of that
// name.
func (rs *RuleSet) HasAction(r *Rule, name string) bool { return hasAction(rs.Actions(r), name) }

// ActionsUpdated reports whether SecRuleUpdateActionById changed rule id.
func (rs *RuleSet) ActionsUpdated(id int) bool {
	_, ok := rs.UpdatedActions[id]
	return ok
}

// RemoveIDs deletes the rules with these ids, as SecRuleRemoveById would.
func (rs *RuleSet) RemoveIDs(ids map[int]bool) {
	rs.remove(func(r *Rule) bool { return r.ID != 0 && ids[r.ID] })
}

// removeRange deletes like Coraza's DeleteByRange (SecMarkers, id 0, go
// only when the range includes 0).
func (rs *RuleSet) removeRange(lo, hi int) {
	rs.remove(func(r *Rule) bool { return r.ID >= lo && r.ID <= hi })
}

func (rs *RuleSet) remove(match func(*Rule) bool) {
	rs.Rules = slices.DeleteFunc(rs.Rules, match)
}

// markTargets records what an update of targets does to the rules it hits:
// negations only narrow what a rule sees, anything else adds to it.
func (rs *RuleSet) markTargets(match func(*Rule) bool, targets string) {
	narrowing := true
	vars, err := ParseVariables(targets)
	if err != nil || len(vars) == 0 {
		narrowing = false
	}
	for _, v := range vars {
		if !v.Negated {
			narrowing = false
		}
	}
	for _, r := range rs.Rules {
		if r.ID == 0 || !match(r) {
			continue
		}
		if narrowing {
			rs.TargetsNarrowed[r.ID] = true
		} else {
			rs.TargetsAdded[r.ID] = true
		}
	}
}
