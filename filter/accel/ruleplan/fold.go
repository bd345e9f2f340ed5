package ruleplan

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/wafsweep/wafsweep/filter/accel/seclang"
)

// CRS's initialization sets about twenty-five TX defaults in phase 1, one
// rule each ("&TX:x @eq 0" then setvar), in every transaction, to the same
// values. Each is a rule evaluation of every request. A fold puts a run of
// them into one SecAction at the place of the first, with the values the
// run leaves, so the request pays for one rule.

// Fold is a run of phase-1 rules that match in every transaction and do
// nothing but set TX values known at load, replaced by one SecAction.
type Fold struct {
	// First is the rule whose place (and id) the SecAction takes; the
	// others are dropped (Folded).
	First *seclang.Rule
	// Folded are the ids of the rest of the run.
	Folded []int
	// Directive is the SecAction, on one line.
	Directive string
}

// setting is what one folded rule leaves in a TX key: a value, or none.
type setting struct {
	key, value string
	removed    bool
}

// foldable reports whether a rule that always matches may join a fold: a
// quiet rule (nolog, pass, no chain) whose only other actions set TX
// variables with a literal key.
func foldable(r *seclang.Rule) bool {
	if !r.HasAction("nolog") || !r.HasAction("pass") || len(r.Chain) > 0 || r.Skip > 0 {
		return false
	}
	for _, a := range r.Actions {
		switch {
		case a.Name == "setvar":
			if _, _, _, _, ok := setvarKey(a.Value); !ok {
				return false
			}
		case !quietActions[a.Name] || a.Name == "skipafter":
			return false
		}
	}
	return true
}

// settings returns what a rule that just ran left in the keys it sets,
// in the order it first names them; ok is false when a value is not
// known or could not be written back as a literal.
func (s *txState) settings(r *seclang.Rule) (out []setting, ok bool) {
	for _, a := range r.Actions {
		if a.Name != "setvar" {
			continue
		}
		key, _, _, _, _ := setvarKey(a.Value)
		if slices.ContainsFunc(out, func(x setting) bool { return x.key == key }) {
			continue
		}
		v := s.get(key)
		if !v.known || (v.set && !literalValue(v.value)) {
			return nil, false
		}
		out = append(out, setting{key: key, value: v.value, removed: !v.set})
	}
	return out, true
}

// literalValue reports whether a value reads back as itself in
// setvar:'tx.key=value' inside a double-quoted action list: no quote, no
// backslash, no macro, no leading sign (setvar would add or subtract) and
// no space at either end (a parser may trim it).
func literalValue(v string) bool {
	return !strings.ContainsAny(v, `'"\`) && !strings.Contains(v, "%{") &&
		(v == "" || (v[0] != '+' && v[0] != '-')) && strings.TrimSpace(v) == v
}

// mentionsTX matches rule text that reads or writes TX in any way.
var mentionsTX = regexp.MustCompile(`(?i)\btx\b`)

// folds groups the foldable rules of phase 1 into runs. A run ends at a
// rule left in between that mentions TX (it could see a value early or
// write one in a new order) or may interrupt (the rules after it would
// not have run, and phase 5 and the audit log see TX). The first rule of
// a run must come from a rule file, where its lines can be rewritten; no
// rule after the first may be one a skip:N counts.
func (w *walker) folds(drops []Dropped) ([]Fold, []Dropped) {
	gone := DroppedIDs(drops)
	counted, ok := skipCounted(w.rs, gone)
	if !ok || len(w.settings) == 0 {
		return nil, nil
	}
	var runs [][]*seclang.Rule
	var run []*seclang.Rule
	flush := func() {
		if len(run) > 1 {
			runs = append(runs, run)
		}
		run = nil
	}
	for _, r := range w.rs.Rules {
		if r.Marker != "" || r.Phase != 1 || gone[r.ID] {
			continue
		}
		_, member := w.settings[r]
		switch {
		case member && len(run) > 0 && !counted[r]:
			run = append(run, r)
		case member:
			// It stays where it is: it may start a run.
			flush()
			if r.Directive.File != seclang.InlineFile {
				run = []*seclang.Rule{r}
			}
		case w.mentionsTX(r) || w.mayInterrupt(r):
			flush()
		}
	}
	flush()
	var out []Fold
	var dropped []Dropped
	for _, run := range runs {
		f := Fold{First: run[0], Directive: w.foldDirective(run)}
		for _, r := range run[1:] {
			f.Folded = append(f.Folded, r.ID)
			dropped = append(dropped, Dropped{ID: r.ID, Kind: Folded, Reason: fmt.Sprintf("sets constant TX values, folded into rule %d", run[0].ID)})
		}
		out = append(out, f)
	}
	return out, dropped
}

// foldDirective writes a run's settings as one SecAction with the first
// rule's id, each key once, with the value the run leaves in it.
func (w *walker) foldDirective(run []*seclang.Rule) string {
	var keys []string
	last := map[string]setting{}
	for _, r := range run {
		for _, s := range w.settings[r] {
			if _, seen := last[s.key]; !seen {
				keys = append(keys, s.key)
			}
			last[s.key] = s
		}
	}
	actions := []string{fmt.Sprintf("id:%d", run[0].ID), "phase:1", "pass", "nolog"}
	for _, k := range keys {
		s := last[k]
		if s.removed {
			actions = append(actions, fmt.Sprintf("setvar:'!tx.%s'", k))
		} else {
			actions = append(actions, fmt.Sprintf("setvar:'tx.%s=%s'", k, s.value))
		}
	}
	return `SecAction "` + strings.Join(actions, ",") + `"`
}

// mentionsTX reports whether a rule's text, its chain's or an update of
// its actions names TX.
func (w *walker) mentionsTX(r *seclang.Rule) bool {
	for _, rule := range r.WithChain() {
		if mentionsTX.MatchString(rule.Directive.Args) ||
			slices.ContainsFunc(w.rs.UpdatedActions[rule.ID], func(a seclang.Action) bool { return mentionsTX.MatchString(a.Value) }) {
			return true
		}
	}
	return false
}

// mayInterrupt reports whether a rule may end the transaction or its
// phase: a disruptive action, or none but pass (the default one applies).
func (w *walker) mayInterrupt(r *seclang.Rule) bool {
	return !w.rs.HasAction(r, "pass") ||
		slices.ContainsFunc(w.rs.Actions(r), func(a seclang.Action) bool { return disruptive[a.Name] })
}
