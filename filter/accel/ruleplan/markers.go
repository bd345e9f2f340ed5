package ruleplan

import (
	"maps"
	"slices"
	"strings"

	"github.com/wafsweep/wafsweep/filter/accel/seclang"
)

// Coraza evaluates every SecMarker in every phase (a marker has phase 0):
// CRS's thirty markers are half the rule evaluations of a benign GET once
// the rules of constant outcome are gone, and most of them are the
// targets of nothing but the gates that went with those rules. This file
// finds the markers no rule left can reach, and the skips whose whole
// window is gone, so that both can leave the rule set too.

// idleSkips returns the rules that only skip (nolog, no variable, no
// chain) over rules that are all dropped: matched or not, the next rule
// evaluated is the same (CRS's 950010 skips a compressed response past
// rules over a body no transaction reads). A skip dropped this way can
// leave another one idle, so the search runs until it finds none.
func idleSkips(rs *seclang.RuleSet, drops []Dropped) []Dropped {
	gone := DroppedIDs(drops)
	counted, ok := skipCounted(rs, gone)
	if !ok || slices.ContainsFunc(rs.Rules, readsMatchedVars) {
		return nil
	}
	var out []Dropped
	for found := true; found; {
		found = false
		for i, r := range rs.Rules {
			marker, skips := skipAfter(r)
			if !skips || r.ID == 0 || gone[r.ID] || counted[r] || !onlySkips(r) || rs.ActionsUpdated(r.ID) {
				continue
			}
			if windowGone(rs.Rules[i+1:], r.Phase, marker, gone) {
				gone[r.ID] = true
				found = true
				out = append(out, Dropped{ID: r.ID, Kind: SkipsOnlyDropped, Reason: "skips to " + marker + " over dropped rules only"})
			}
		}
	}
	return out
}

// windowGone reports whether every rule of the phase before the first
// marker named marker in rules is gone (markers in between are skipped or
// evaluated to no effect alike). A skip to a marker that does not follow
// runs to the end of the phase and on into the next ones, so it stays.
func windowGone(rules []*seclang.Rule, phase int, marker string, gone map[int]bool) bool {
	for _, r := range rules {
		switch {
		case r.Marker == marker:
			return true
		case r.Marker != "" || r.Phase != phase:
		case r.ID == 0 || !gone[r.ID]:
			return false
		}
	}
	return false
}

// UnusedMarkers returns the markers of rs no rule in it can reach: no
// rule, chain member or action update names it (by its text, so a name
// the parser reads otherwise than Coraza still keeps the marker), and no
// skip:N may count it. A marker also sets the MATCHED_* variables when
// Coraza evaluates it, so none goes when a rule reads them before its own
// match. rs is the rule set as the WAF will hold it, dropped rules gone.
func UnusedMarkers(rs *seclang.RuleSet) []*seclang.Rule {
	counted, ok := skipCounted(rs, nil)
	if !ok || rs.IgnoresCompilationErrors || slices.ContainsFunc(rs.Rules, readsMatchedVars) {
		return nil
	}
	texts := referenceTexts(rs)
	var unused []*seclang.Rule
	kept := map[[2]any]bool{} // a file included twice keeps a line if either copy needs it
	for _, r := range rs.Rules {
		switch {
		case r.Marker == "":
		case counted[r] || named(texts, r.Marker):
			kept[place(r)] = true
		default:
			unused = append(unused, r)
		}
	}
	return slices.DeleteFunc(unused, func(r *seclang.Rule) bool { return kept[place(r)] })
}

func place(r *seclang.Rule) [2]any { return [2]any{r.Directive.File, r.Directive.Line} }

// referenceTexts is every piece of rule text that could name a marker, in
// lower case.
func referenceTexts(rs *seclang.RuleSet) []string {
	var texts []string
	for _, r := range rs.Rules {
		if r.Marker != "" {
			continue
		}
		for _, rule := range r.WithChain() {
			texts = append(texts, strings.ToLower(rule.Directive.Args))
		}
	}
	for _, actions := range append([][]seclang.Action{rs.DefaultActions}, slices.Collect(maps.Values(rs.UpdatedActions))...) {
		for _, a := range actions {
			texts = append(texts, strings.ToLower(a.Name+":"+a.Value))
		}
	}
	return texts
}

// named reports whether a text holds the marker's name as a word of its
// own (not inside a longer name).
func named(texts []string, marker string) bool {
	m := strings.ToLower(marker)
	for _, t := range texts {
		for rest := t; ; {
			i := strings.Index(rest, m)
			if i < 0 {
				break
			}
			end := i + len(m)
			if (i == 0 || !nameByte(rest[i-1])) && (end == len(rest) || !nameByte(rest[end])) {
				return true
			}
			rest = rest[i+1:]
		}
	}
	return false
}

func nameByte(c byte) bool {
	return c == '-' || c == '_' || c == '.' || ('a' <= c && c <= 'z') || ('0' <= c && c <= '9')
}

// skipCounted returns the entries (rules and markers) a skip:N of rs may
// count, each skip's window followed as far as a ctl removal could
// stretch it; every ctl:ruleRemove* of the rule set is taken to happen.
// The windows run over the rules the WAF will hold: those with an id in
// gone are left out of it at load, and Coraza counts only what it has.
// ok is false when a ctl could remove markers (a range over id 0): then
// no window has a known end.
func skipCounted(rs *seclang.RuleSet, gone map[int]bool) (counted map[*seclang.Rule]bool, ok bool) {
	w := &walker{rs: rs}
	for _, r := range rs.Rules {
		for _, rule := range r.WithChain() {
			for _, a := range rs.Actions(rule) {
				if a.Name == "ctl" {
					w.addRemover(a.Value)
				}
			}
		}
	}
	if len(w.removersOf(&seclang.Rule{Marker: "any"})) > 0 {
		return nil, false
	}
	counted = map[*seclang.Rule]bool{}
	held := func(r *seclang.Rule) bool { return r.ID == 0 || !gone[r.ID] }
	for i, r := range rs.Rules {
		if r.Skip <= 0 || !held(r) {
			continue
		}
		window := &skipWindow{owner: r, left: r.Skip}
		for _, e := range rs.Rules[i+1:] {
			if (e.Marker == "" && e.Phase != r.Phase) || !held(e) {
				continue
			}
			counted[e] = true
			if window.passed(e, w.removersOf(e)) {
				break
			}
		}
	}
	return counted, true
}
