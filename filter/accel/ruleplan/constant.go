package ruleplan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wafsweep/wafsweep/filter/accel/seclang"
)

// DropKind says why a rule can leave the rule set.
type DropKind int

const (
	// NeverMatches: its operator matches in no transaction, so it runs
	// none of its actions.
	NeverMatches DropKind = iota
	// NeverReached: a gate before it in its phase always skips past it.
	NeverReached
	// OnlySkips: a gate that matches in every transaction that reaches it
	// and does nothing but skip (nolog, no variable set), dropped together
	// with everything it skips.
	OnlySkips
	// SkipsOnlyDropped: a rule that only skips (nolog, no variable set)
	// over rules that are all dropped.
	SkipsOnlyDropped
	// Folded: a rule that always matches and only sets TX values known at
	// load, whose settings a Fold's SecAction makes at an earlier rule's
	// place.
	Folded
)

// Quiet reports whether a rule dropped for this reason may match in the
// whole rule set: it does, with neither log nor audit entry, and to no
// effect on the transaction.
func (k DropKind) Quiet() bool { return k == OnlySkips || k == SkipsOnlyDropped || k == Folded }

func (k DropKind) String() string {
	switch k {
	case NeverMatches:
		return "never matches"
	case NeverReached:
		return "never reached"
	case OnlySkips:
		return "only skips"
	case SkipsOnlyDropped:
		return "skips only dropped rules"
	case Folded:
		return "folded"
	}
	return fmt.Sprintf("DropKind(%d)", int(k))
}

// Dropped is a rule that no transaction evaluates to any effect.
type Dropped struct {
	ID     int
	Kind   DropKind
	Reason string
}

// DroppedIDs is the set of the dropped rules' ids.
func DroppedIDs(drops []Dropped) map[int]bool {
	gone := make(map[int]bool, len(drops))
	for _, d := range drops {
		gone[d.ID] = true
	}
	return gone
}

// Constant finds the rules whose outcome is the same in every transaction,
// so that a rule set without them decides every transaction exactly as
// the whole one does. CRS's paranoia-level gates are the case it is for:
// the level is set once, unconditionally, by SecAction and by rules over
// &TX counts in phase 1, so a gate "TX:DETECTION_PARANOIA_LEVEL @lt 2"
// either always skips its block (paranoia 1) or never matches (paranoia 4).
// At paranoia 1 that is about a hundred rule evaluations of every request
// that do nothing, and rules that run without ever being reached.
//
// The analysis walks phases 1 to 4 in order with the TX values known to
// hold in every transaction. It decides only rules over known TX values
// (numeric and string operators, no transformation) and over the response
// body of a rule set that never reads it (one empty value). Every other
// rule that can set a TX value makes that value unknown (one whose key is
// built at run time: every key it could name). What it relies on, and why
// each is safe:
//   - phase 1 runs to its end before phases 2 to 4, or the transaction was
//     interrupted and they do not run; phases 2 to 4 may be skipped, so a
//     value they set is unknown in the phases after. An allow action may
//     end a phase early: no phase after one with such a rule is decided.
//     Phase 5 runs even after an interruption, with the values of that
//     moment, so nothing in it is decided.
//   - a rule a ctl:ruleRemove* of an earlier rule could reach (by id, tag
//     or message) is not known to run, unless it only skips and the ctl
//     would remove all it skips with it (CRS 905100 removes every
//     OWASP_CRS rule for Apache's dummy connection).
//   - a rule a skip:N could count stays, so no skip lands elsewhere.
//   - a gate is dropped only when all it skips goes too, and only if no
//     rule reads MATCHED_VAR* before its own match: a dropped gate leaves
//     the MATCHED_* variables as the rule before it set them.
func Constant(rs *seclang.RuleSet) Constants {
	if rs.IgnoresCompilationErrors || !plainDefaults(rs.DefaultActions) {
		return Constants{}
	}
	w := &walker{rs: rs, state: newTxState(), never: map[int]string{}, counted: map[int]bool{}, bodyUnread: responseBodyUnread(rs),
		settings: map[*seclang.Rule][]setting{}}
	for phase := 1; phase <= 4 && !w.stopped; phase++ {
		w.walkPhase(phase)
		if phase >= 2 {
			w.state.forgetPhase(phase)
		}
		// An allow ends its phase early (or the request phases), and the
		// phases after it start without what the rest would have set.
		w.stopped = w.stopped || w.mayAllow
	}
	drops := w.drops()
	folds, folded := w.folds(drops)
	drops = append(drops, folded...)
	return Constants{Dropped: sortedDrops(append(drops, idleSkips(rs, drops)...)), Folds: folds}
}

// Constants is what Constant finds: rules to drop, and runs of rules to
// fold into one.
type Constants struct {
	Dropped []Dropped
	Folds   []Fold
}

// plainDefaults reports whether SecDefaultAction gives rules nothing the
// analysis would have to model: a transformation, a variable, a ctl.
func plainDefaults(actions []seclang.Action) bool {
	for _, a := range actions {
		switch a.Name {
		case "phase", "log", "nolog", "auditlog", "noauditlog", "pass", "block", "deny", "drop", "status":
		case "t":
			if a.Value != "none" {
				return false
			}
		default:
			return false
		}
	}
	return true
}

type outcome int

const (
	undecided outcome = iota
	always
	never
)

// gate is a rule that matches in every transaction that reaches it, and
// skips to a marker.
type gate struct {
	rule    *seclang.Rule
	marker  string
	members []*seclang.Rule // the rules of its phase it skips
	// removers are the ctl actions that may remove the gate before it runs
	// (it is then a gate that only skips). Each must remove every rule the
	// gate skips too, so that nothing it skips ever runs.
	removers []remover
	// broken is set when a rule it skips is left by one of them: that
	// rule and the rest may run, and the gate stays.
	broken bool
}

func (g *gate) covers(r *seclang.Rule) bool {
	for _, rm := range g.removers {
		if !rm.reaches(r) {
			return false
		}
	}
	return true
}

type walker struct {
	rs       *seclang.RuleSet
	state    *txState
	removers []remover
	never    map[int]string // rule id -> why
	counted  map[int]bool   // rules a skip:N may count: they stay
	// bodyUnread: no transaction reads the response body.
	bodyUnread bool
	// mayAllow: a rule of this phase that may match has an allow action.
	mayAllow bool
	gates    []*gate
	stopped  bool
	// settings are the foldable rules of phase 1 and what each leaves.
	settings map[*seclang.Rule][]setting
}

func (w *walker) walkPhase(phase int) {
	var open *gate               // a decided skip in progress
	pending := map[string]bool{} // markers of skips that may or may not happen
	var skip *skipWindow         // a skip:N that may or may not happen
	for _, r := range w.rs.Rules {
		if r.Marker == "" && r.Phase != phase {
			continue
		}
		removers := w.removersOf(r)
		inSkip := skip != nil
		if inSkip {
			w.counted[r.ID] = true
			if skip.passed(r, removers) {
				skip = nil
			}
		}
		if r.Marker != "" {
			if open != nil && open.marker == r.Marker {
				open = nil
			}
			if open == nil {
				delete(pending, r.Marker)
			}
			continue
		}
		if open != nil {
			if open.covers(r) {
				open.members = append(open.members, r)
				continue
			}
			// A ctl that removes the gate leaves this rule to run.
			open.broken = true
			pending[open.marker] = true
			open = nil
		}
		sure := !inSkip && (len(pending) == 0 || skipsOnlyTo(pending, r)) &&
			(len(removers) == 0 || (onlySkips(r) && !slices.ContainsFunc(removers, remover.keepsRule)))
		result, why, matches := w.decide(r)
		switch {
		case result == never:
			w.never[r.ID] = why
			continue
		case result == always && sure:
			if !w.applyAlways(r, phase, matches) {
				w.stopped = true
				return
			}
			if phase == 1 && foldable(r) {
				if s, ok := w.state.settings(r); ok {
					w.settings[r] = s
				}
			}
			if marker, ok := skipAfter(r); ok {
				open = &gate{rule: r, marker: marker, removers: removers}
				w.gates = append(w.gates, open)
			}
		default:
			before := len(w.removers)
			w.mayAllow = w.mayAllow || w.rs.HasAction(r, "allow")
			w.applyMaybe(r)
			if marker, ok := skipAfter(r); ok {
				pending[marker] = true
			}
			if skip != nil && len(w.removers) > before {
				skip.toMarker = true // a removal inside the window may stretch it
			}
		}
		if r.Skip > 0 {
			skip = w.startSkip(r, skip)
		}
		if w.stopped {
			return
		}
	}
}

// skipsOnlyTo reports whether a gate that only skips lands where every
// pending skip lands: whether those skips happen or the gate matches, the
// rules between it and its marker are not evaluated (CRS 950010 skips a
// compressed response's whole file, to the marker its gates skip to).
func skipsOnlyTo(pending map[string]bool, r *seclang.Rule) bool {
	marker, ok := skipAfter(r)
	if !ok || !onlySkips(r) {
		return false
	}
	for m := range pending {
		if m != marker {
			return false
		}
	}
	return true
}

// skipWindow follows a skip:N that may or may not happen. Coraza counts
// against N the rules of the phase and the markers it meets, but not the
// rules removed for the transaction; so an entry counts for sure when it
// is a marker, or when every ctl that could remove it would also have
// removed the rule that skips.
type skipWindow struct {
	owner    *seclang.Rule
	left     int
	toMarker bool // run to the next marker, whatever N says
}

func (w *walker) startSkip(r *seclang.Rule, current *skipWindow) *skipWindow {
	if current != nil {
		current.toMarker = true
		return current
	}
	return &skipWindow{owner: r, left: r.Skip}
}

// passed counts an entry met inside the window and reports whether the
// skip is over once it is past.
func (sw *skipWindow) passed(r *seclang.Rule, removers []remover) bool {
	if r.Marker != "" {
		sw.left--
		return sw.toMarker || sw.left <= 0
	}
	for _, rm := range removers {
		if !rm.keepsRule() && !rm.reaches(sw.owner) {
			return false
		}
	}
	sw.left--
	return !sw.toMarker && sw.left <= 0
}

// decide says whether r matches in every transaction that reaches it, in
// none, or that it depends; when it always matches, on how many values
// (Coraza runs the non-disruptive actions once for each).
func (w *walker) decide(r *seclang.Rule) (result outcome, why string, matches int) {
	if r.ID == 0 || w.rs.ActionsUpdated(r.ID) || w.rs.TargetsAdded[r.ID] || w.rs.TargetsNarrowed[r.ID] {
		return undecided, "", 0
	}
	if r.Operator == nil {
		if len(r.Chain) > 0 {
			return undecided, "", 0
		}
		return always, "", 1
	}
	values, ok := w.targetValues(r)
	if !ok {
		return undecided, "", 0
	}
	argument, ok := w.state.expand(r.Operator.Argument)
	if !ok {
		return undecided, "", 0
	}
	match := operatorOn(r.Operator.Name, argument)
	if match == nil && !slices.ContainsFunc(values, func(v string) bool { return v != "" }) && noPhraseEmpty(r.Operator.Name, argument) {
		match = func(string) bool { return false }
	}
	if match == nil {
		return undecided, "", 0
	}
	for _, v := range values {
		if match(v) != r.Operator.Negated {
			matches++
		}
	}
	if matches == 0 {
		return never, fmt.Sprintf("%s %q is false for %s in every transaction", r.Targets, r.Operator.Argument, strings.Join(quoteAll(values), ", ")), 0
	}
	if len(r.Chain) > 0 {
		return undecided, "", 0
	}
	return always, "", matches
}

// targetValues returns what r's targets hand its operator in every
// transaction that reaches it: known TX values, read as they are, or the
// response body of a rule set that never reads it (Coraza leaves
// RESPONSE_BODY one empty value), through transformations that keep an
// empty value empty.
func (w *walker) targetValues(r *seclang.Rule) ([]string, bool) {
	if w.bodyUnread && readsOnlyResponseBody(r.Variables) {
		for _, t := range r.Transformations {
			if !keepEmpty[strings.ToLower(t)] {
				return nil, false
			}
		}
		return []string{""}, true
	}
	if len(r.Transformations) > 0 {
		return nil, false
	}
	return w.state.values(r.Variables)
}

func readsOnlyResponseBody(vars []seclang.Variable) bool {
	for _, v := range vars {
		if v.Name != "RESPONSE_BODY" || v.Key != "" || v.Negated || v.Count {
			return false
		}
	}
	return len(vars) > 0
}

// keepEmpty are transformations that turn an empty value into an empty value.
var keepEmpty = map[string]bool{
	"lowercase": true, "uppercase": true, "removewhitespace": true, "compresswhitespace": true,
	"removenulls": true, "trim": true, "trimleft": true, "trimright": true, "urldecode": true, "urldecodeuni": true,
}

// responseBodyUnread reports whether no transaction of the rule set has
// response body access: SecResponseBodyAccess is off (Coraza's default)
// and no ctl can turn it on.
func responseBodyUnread(rs *seclang.RuleSet) bool {
	if rs.ResponseBodyAccess {
		return false
	}
	for _, r := range rs.Rules {
		for _, rule := range r.WithChain() {
			for _, a := range rule.Actions {
				if a.Name == "ctl" && strings.HasPrefix(strings.ToLower(a.Value), "responsebodyaccess") {
					return false
				}
			}
		}
	}
	return true
}

func quoteAll(values []string) []string {
	if len(values) == 0 {
		return []string{"no value"}
	}
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = strconv.Quote(v)
	}
	return out
}

// numericOperators are Coraza's integer comparisons: both sides through
// strconv.Atoi, an error read as 0.
var numericOperators = map[string]func(value, argument int) bool{
	"eq": func(v, a int) bool { return v == a },
	"lt": func(v, a int) bool { return v < a },
	"le": func(v, a int) bool { return v <= a },
	"gt": func(v, a int) bool { return v > a },
	"ge": func(v, a int) bool { return v >= a },
}

// operatorOn returns the operator's answer for a value, as Coraza's
// operator of that name gives it for the (expanded) argument, or nil for
// an operator the analysis does not decide.
func operatorOn(name, argument string) func(string) bool {
	if compare := numericOperators[name]; compare != nil {
		want, _ := strconv.Atoi(argument)
		return func(v string) bool {
			n, _ := strconv.Atoi(v)
			return compare(n, want)
		}
	}
	switch name {
	case "streq":
		return func(v string) bool { return v == argument }
	case "contains":
		return func(v string) bool { return strings.Contains(v, argument) }
	case "beginswith":
		return func(v string) bool { return strings.HasPrefix(v, argument) }
	case "endswith":
		return func(v string) bool { return strings.HasSuffix(v, argument) }
	case "rx":
		re, err := goRegexp(argument)
		if err != nil || re == nil {
			return nil
		}
		return re.MatchString
	}
	return nil
}

// noPhraseEmpty reports whether a phrase operator matches no empty value:
// Coraza's @pm finds nothing in a value shorter than its shortest phrase,
// @pmFromFile drops empty lines, and @pm's phrases are its argument split
// at each space.
func noPhraseEmpty(name, argument string) bool {
	switch name {
	case "pmfromfile", "pmf":
		return true
	case "pm":
		return argument != "" && !slices.Contains(strings.Split(argument, " "), "")
	}
	return false
}

// disruptive are the actions that end or change a transaction's course.
var disruptive = map[string]bool{"deny": true, "drop": true, "block": true, "redirect": true, "allow": true, "proxy": true}

// applyAlways runs the effects of a rule that matches `matches` values in
// every transaction that reaches it. It reports false when the walk
// cannot go on: the rule may interrupt, or relies on a default disruptive
// action.
func (w *walker) applyAlways(r *seclang.Rule, phase, matches int) bool {
	if !r.HasAction("pass") {
		return false
	}
	for _, a := range r.Actions {
		switch {
		case disruptive[a.Name]:
			return false
		case a.Name == "setvar":
			// Coraza runs non-disruptive actions once per matched value.
			for range matches {
				if !w.state.set(a.Value, phase) {
					return false
				}
			}
		case a.Name == "capture":
			w.state.forgetCaptures()
		case a.Name == "ctl":
			w.addRemover(a.Value)
		}
	}
	return true
}

// applyMaybe records what a rule that may or may not match could change,
// with the actions SecRuleUpdateActionById gave it.
func (w *walker) applyMaybe(r *seclang.Rule) {
	for _, rule := range r.WithChain() {
		for _, a := range w.rs.Actions(rule) {
			switch a.Name {
			case "setvar":
				w.state.forget(a.Value)
			case "capture":
				w.state.forgetCaptures()
			case "ctl":
				w.addRemover(a.Value)
			}
		}
	}
}

// skipAfter returns the marker a rule skips to when it matches.
func skipAfter(r *seclang.Rule) (string, bool) {
	for _, a := range r.Actions {
		if a.Name == "skipafter" {
			return a.Value, true
		}
	}
	return "", false
}

// drops lists what the walk found, less what a skip:N could count.
func (w *walker) drops() []Dropped {
	counted := w.counted
	readsMatched := slices.ContainsFunc(w.rs.Rules, readsMatchedVars)
	var out []Dropped
	for _, r := range w.rs.Rules {
		if why, ok := w.never[r.ID]; ok && !counted[r.ID] {
			out = append(out, Dropped{ID: r.ID, Kind: NeverMatches, Reason: why})
		}
	}
	for _, g := range w.gates {
		all := true
		for _, m := range g.members {
			if m.ID == 0 || counted[m.ID] {
				all = false
				continue
			}
			out = append(out, Dropped{ID: m.ID, Kind: NeverReached, Reason: fmt.Sprintf("rule %d always skips to %s", g.rule.ID, g.marker)})
		}
		if all && !g.broken && onlySkips(g.rule) && !readsMatched && !counted[g.rule.ID] {
			out = append(out, Dropped{ID: g.rule.ID, Kind: OnlySkips, Reason: "always skips to " + g.marker + ", and does nothing else"})
		}
	}
	return sortedDrops(out)
}

func sortedDrops(drops []Dropped) []Dropped {
	slices.SortFunc(drops, func(a, b Dropped) int { return a.ID - b.ID })
	return slices.CompactFunc(drops, func(a, b Dropped) bool { return a.ID == b.ID })
}

// quietActions are the actions a gate may have and still leave no trace
// when it matches: no log or audit entry, no severity, no variable.
var quietActions = map[string]bool{
	"id": true, "phase": true, "pass": true, "nolog": true, "noauditlog": true, "t": true,
	"tag": true, "ver": true, "rev": true, "maturity": true, "accuracy": true, "msg": true, "skipafter": true,
}

func onlySkips(r *seclang.Rule) bool {
	if !r.HasAction("nolog") || len(r.Chain) > 0 {
		return false
	}
	for _, a := range r.Actions {
		if !quietActions[a.Name] {
			return false
		}
	}
	return true
}

// readsMatchedVars reports whether a rule reads MATCHED_VAR* before its
// own match could set them.
func readsMatchedVars(r *seclang.Rule) bool {
	for _, v := range r.Variables {
		if strings.HasPrefix(v.Name, "MATCHED_VAR") {
			return true
		}
	}
	return r.Operator != nil && strings.Contains(strings.ToLower(r.Operator.Argument), "%{matched_var")
}
