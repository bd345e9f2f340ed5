// Package accel makes full-CRS inspection cheaper without changing a
// verdict. For every transaction it drops the rules whose outcome is the
// same in all of them (ruleplan.Constant: paranoia-level gates and what
// they skip); per transaction it removes the phase-1 and phase-2 rules
// that cannot match ("design B" of shared/notes/acceleration.md): @rx
// rules, and those whose
// operator package operators decides (@pm, @pmFromFile, @detectXSS,
// @validateByteRange, binary @rx). The latter matter for memory as much as
// for time: every rule that runs with transformations fills Coraza's
// per-transaction transformation cache, a map that never shrinks and
// stays with the pooled transaction (5 MB after one 50 KB JSON body).
//
// At build time it reads the rule set (seclang), picks the candidate rules
// (ruleplan), compiles their Go expressions into one prefilter
// (multimatch) and the other operators into exact matchers (operators).
// It then puts generated rules at the start of phases 1 and 2: collectors, each a
// multiMatch rule with a transformation chain, which see every value their
// candidates see and record which candidates match one, then a decider
// that removes, for this transaction only, each candidate that matched
// nothing (Coraza's RemoveRuleByID, reached by an interface assertion;
// without it, nothing is removed and every rule runs). A prefilter hit is confirmed exactly (RE2
// fed the expression rewritten with Go's semantics), so a candidate is
// removed only when its own operator matches none of the values; the
// prefilter only saves the work on values it rules out. Rules that stay run
// Coraza's own operators unchanged.
//
// Shadow mode decides the same way but removes nothing; the candidates run
// as in stock Coraza, and a removal that would have been wrong (the rule
// matched) is counted and logged as a disagreement.
package accel

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"

	"github.com/wafsweep/wafsweep/filter/accel/exact"
	"github.com/wafsweep/wafsweep/filter/accel/literals"
	"github.com/wafsweep/wafsweep/filter/accel/multimatch"
	"github.com/wafsweep/wafsweep/filter/accel/operators"
	"github.com/wafsweep/wafsweep/filter/accel/plugin"
	"github.com/wafsweep/wafsweep/filter/accel/ruleplan"
	"github.com/wafsweep/wafsweep/filter/accel/seclang"
)

// Mode says what the accelerator does.
type Mode string

const (
	// Off builds the rule set as it is.
	Off Mode = "off"
	// Prefilter removes, per transaction, candidates that cannot match.
	Prefilter Mode = "prefilter"
	// Shadow decides as Prefilter does but removes nothing, and counts
	// decisions the exact evaluation contradicts.
	Shadow Mode = "shadow"
)

// ParseMode validates a mode name; "" is Off.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return Off, nil
	case Off, Prefilter, Shadow:
		return m, nil
	}
	return "", fmt.Errorf("acceleration %q: use prefilter, shadow or off", s)
}

// FirstRuleID is the first id of the generated rules; they use
// FirstRuleID..FirstRuleID+999, far above CRS's and ModSecurity's ranges.
const FirstRuleID = 1_990_000_000

const (
	decideRuleID = FirstRuleID + 900 // phase 2's; phase 1's is one less
	checkRuleID  = FirstRuleID + 901
	lastRuleID   = FirstRuleID + 999
)

// Logger receives the accelerator's messages (fall-backs, disagreements).
type Logger interface {
	Warn(msg string)
	Info(msg string)
}

// Options configure New.
type Options struct {
	Mode Mode
	// Root resolves Include names, as the WAF's root filesystem does.
	Root fs.FS
	// Directives is the complete directive text the WAF is built from.
	Directives string
	// Engine builds the prefilter; nil picks DefaultEngine.
	Engine EngineFactory
	Log    Logger
}

// Accelerator is one accelerated rule set. Install its Directives in front
// of the rule set's own, build the WAF, then call Built; call Finish when a
// transaction is closed.
type Accelerator struct {
	mode        Mode
	log         Logger
	root        fs.FS                // Options.Root marked by plugin.CompactPhrases
	candidates  []ruleplan.Candidate // index = prefilter expression index ("" when not a Go expression)
	included    multimatch.Bitset    // candidates the collectors cover
	collectors  []collector
	collectorOf []int // candidate -> collector, -1 when not covered
	engine      Engine
	confirm     []*exact.Confirm // exact answer for prefilter hits
	minLen      []int            // shorter values cannot match
	reference   []*exact.Go      // Coraza's own engine, for shadow checks
	directives  string
	token       string
	unregister  func()
	excluded    []ruleplan.Exclusion
	dropped     []ruleplan.Dropped // left out of the rule set at load
	ranges      idRanges           // each phase's candidates; the WAF's rule ids once UseRuleIDs gives them
	markersOut  int                // markers left out of the rule files (ruleEditor)
	folds       int                // runs of constant settings made one SecAction
	buildTime   time.Duration
	// observe, when set, sees every value a collector receives: the
	// differential tests compare those values with what Coraza's own
	// rules inspect. It is set before the first transaction and never
	// in production.
	observe func(tx plugintypes.TransactionState, collector int, value string)

	runtime
}

// collector is one generated rule: a transformation chain and the union
// of its candidates' targets.
type collector struct {
	phase           int
	targets         []string
	transformations []string // run with multiMatch
	candidates      []int
	// direct are the candidates decided value by value (Engine.Direct).
	direct []int
}

// New analyses the rule set and prepares the generated rules. It fails
// only on rule text it cannot read; a rule set with nothing to accelerate
// yields an accelerator with no generated rules.
func New(opts Options) (*Accelerator, error) {
	start := time.Now()
	if opts.Mode == Off || opts.Mode == "" {
		return nil, errors.New("accel.New with mode off: build the WAF without an accelerator")
	}
	editor := &ruleEditor{FS: opts.Root}
	root := plugin.CompactPhrases(editor)
	directives, err := seclang.Read(root, opts.Directives)
	if err != nil {
		return nil, fmt.Errorf("reading the rule set for acceleration: %w", err)
	}
	rs, err := seclang.Parse(directives)
	if err != nil {
		return nil, fmt.Errorf("analysing the rule set for acceleration: %w", err)
	}
	var dropped []ruleplan.Dropped
	var markers []*seclang.Rule
	folds := 0
	if opts.Mode == Prefilter {
		// Shadow mode checks removals against the whole rule set, so it
		// keeps every rule.
		constants := ruleplan.Constant(rs)
		dropped = constants.Dropped
		rs.RemoveIDs(ruleplan.DroppedIDs(dropped))
		markers = fileMarkers(ruleplan.UnusedMarkers(rs))
		editor.plan(markers, constants.Folds)
		folds = len(constants.Folds)
	}
	// Analyze sees the markers left out too: no skip:N may count them,
	// and its skip windows, which run to a marker, stay as wide.
	plan := ruleplan.Analyze(rs)
	a := &Accelerator{mode: opts.Mode, log: opts.Log, root: root, candidates: plan.Candidates, excluded: plan.Excluded, dropped: dropped, markersOut: len(markers), folds: folds,
		ranges: newIDRanges(nil, plan.Candidates)}
	if a.log == nil {
		a.log = discard{}
	}
	exprs := make([]string, len(a.candidates))
	for i, c := range a.candidates {
		exprs[i] = c.Expr
	}
	engine := opts.Engine
	if engine == nil {
		engine = DefaultEngine
	}
	if a.engine, err = engine(exprs); err != nil {
		return nil, fmt.Errorf("compiling the matcher: %w", err)
	}
	a.minLen = make([]int, len(exprs))
	for i := range exprs {
		if a.minLen[i], err = literals.MinLen(exprs[i]); err != nil {
			return nil, err
		}
	}
	a.confirm = make([]*exact.Confirm, len(exprs))
	a.reference = make([]*exact.Go, len(exprs))
	for i := range exprs {
		if exprs[i] != "" {
			a.confirm[i] = exact.NewConfirm(exprs[i])
			a.reference[i] = exact.NewGo(exprs[i])
		}
	}
	a.decideOperators()
	a.plan()
	a.runtime.init(a)
	a.token, a.unregister = plugin.Register(a)
	a.directives = a.generate()
	a.buildTime = time.Since(start)
	return a, nil
}

// plan groups the candidates the engine covers into collectors. A
// collector must hand each of its candidates every value Coraza would
// evaluate for it. Every collector runs with multiMatch: it evaluates the
// original value and each value a step of its chain reports as changed,
// so a candidate whose collector chain (collectorChain) is a prefix of the
// collector's sees its values among the collector's. Fewer collectors mean
// fewer passes over the values, and multiMatch values skip Coraza's
// per-transaction transformation cache, which never shrinks and stays with
// pooled transactions (collectors of exact chains without multiMatch held
// 323 MB after sixteen 50 KB JSON bodies).
func (a *Accelerator) plan() {
	a.included = multimatch.NewBitset(len(a.candidates))
	a.collectorOf = make([]int, len(a.candidates))
	var covered []int
	for i, c := range a.candidates {
		a.collectorOf[i] = -1
		if !a.engine.Prefilter.Filtered(i) && a.engine.Direct[i] == nil {
			if c.Expr != "" { // the others were excluded with their reason
				a.excluded = append(a.excluded, ruleplan.Exclusion{ID: c.ID, Reason: "expression has no fixed text to look for"})
			}
			continue
		}
		covered = append(covered, i)
	}
	// The longest chains first: each becomes a collector unless it is a
	// prefix of one already chosen.
	byLength := slices.Clone(covered)
	slices.SortStableFunc(byLength, func(x, y int) int {
		return len(a.candidates[y].Transformations) - len(a.candidates[x].Transformations)
	})
	for _, i := range byLength {
		c := a.candidates[i]
		n := a.collectorFor(c)
		col := &a.collectors[n]
		col.candidates = append(col.candidates, i)
		if a.engine.Direct[i] != nil {
			col.direct = append(col.direct, i)
		}
		col.targets = unionTargets(col.targets, c.Targets)
		a.collectorOf[i] = n
		a.included.Set(i)
	}
	for k := range a.collectors {
		slices.Sort(a.collectors[k].candidates)
		slices.Sort(a.collectors[k].direct)
	}
}

// collectorFor returns the collector that sees what candidate c sees,
// adding one when none does (see plan).
func (a *Accelerator) collectorFor(c ruleplan.Candidate) int {
	chain := collectorChain(c)
	for k, col := range a.collectors {
		if col.phase == c.Phase && isPrefix(chain, col.transformations) {
			return k
		}
	}
	a.collectors = append(a.collectors, collector{phase: c.Phase, transformations: chain})
	return len(a.collectors) - 1
}

// collectorChain is the chain that, run with multiMatch, evaluates every
// value candidate c evaluates. With multiMatch, that is c's own chain.
// Without (most of CRS), c evaluates the output of its whole chain, which
// multiMatch reaches only if every step reports each change it makes: two
// CRS transformations do not (htmlEntityDecode and removeWhitespace, see
// plugin.HonestChain), and a collector running them would miss the decoded
// value (a CRS XSS bypass: "&apos;);&#97;lert(1);//" and nine "&nGt;"
// decode to as many bytes). Those steps are replaced by twins with
// Coraza's output and an honest report.
func collectorChain(c ruleplan.Candidate) []string {
	if c.MultiMatch {
		return c.Transformations
	}
	return plugin.HonestChain(c.Transformations)
}

// decideOperators gives the candidates that are not Go expressions (other
// operators, binary @rx) their exact matcher in Engine.Direct, and
// excludes, with the reason, those package operators leaves to Coraza.
func (a *Accelerator) decideOperators() {
	for i, c := range a.candidates {
		if c.Expr != "" {
			continue
		}
		m, err := operators.New(operators.Operator{Name: c.Operator, Argument: c.Argument, Dir: c.Dir, Root: a.root})
		if err != nil {
			a.excluded = append(a.excluded, ruleplan.Exclusion{ID: c.ID, Reason: fmt.Sprintf("@%s: %v", c.Operator, err)})
			continue
		}
		a.engine.Direct[i] = m
	}
}

// isPrefix reports whether chain is a prefix of (or equal to) of, by
// transformation name (Coraza's names are case-insensitive).
func isPrefix(chain, of []string) bool {
	if len(chain) > len(of) {
		return false
	}
	for i := range chain {
		if !strings.EqualFold(chain[i], of[i]) {
			return false
		}
	}
	return true
}

// unionTargets adds a rule's positive targets to a collector's. Negated
// targets are left out: the collector then sees more values than the rule,
// never fewer.
func unionTargets(have []string, targets string) []string {
	vars, err := seclang.ParseVariables(targets)
	if err != nil {
		return have
	}
	for _, v := range vars {
		if v.Negated {
			continue
		}
		t := v.Name
		if v.Key != "" {
			t += ":" + v.Key
		}
		if !slices.Contains(have, t) && !slices.Contains(have, v.Name) {
			have = append(have, t)
		}
		if v.Key == "" {
			// The whole collection covers its keyed entries.
			have = slices.DeleteFunc(have, func(s string) bool { return strings.HasPrefix(s, v.Name+":") })
		}
	}
	return have
}

// generate writes the collector, decider and (shadow) check rules.
func (a *Accelerator) generate() string {
	if len(a.collectors) == 0 {
		return ""
	}
	var b strings.Builder
	phases := map[int]bool{}
	for i, c := range a.collectors {
		phases[c.phase] = true
		fmt.Fprintf(&b, "SecRule %s \"@%s %s:%d\" \"id:%d,phase:%d,pass,nolog,noauditlog,t:none",
			strings.Join(c.targets, "|"), plugin.CollectOperator, a.token, i, FirstRuleID+i, c.phase)
		for _, t := range c.transformations {
			b.WriteString(",t:" + t)
		}
		b.WriteString(",multiMatch\"\n")
	}
	for phase := 1; phase <= 2; phase++ {
		if phases[phase] {
			fmt.Fprintf(&b, "SecRule REQUEST_METHOD \"@%s %s:%d\" \"id:%d,phase:%d,pass,nolog,noauditlog,t:none\"\n",
				plugin.DecideOperator, a.token, phase, decideRuleID+phase-2, phase)
		}
	}
	if a.mode == Shadow {
		fmt.Fprintf(&b, "SecRule REQUEST_METHOD \"@%s %s\" \"id:%d,phase:5,pass,nolog,noauditlog,t:none\"\n",
			plugin.CheckOperator, a.token, checkRuleID)
	}
	return b.String()
}

// Directives are the generated rules, to put before every other directive
// so that they are the first rules of phases 1 and 2.
func (a *Accelerator) Directives() string { return a.directives }

// Trailer is what goes after every other directive: the removal of the
// rules whose outcome is the same in every transaction (ruleplan.Constant).
func (a *Accelerator) Trailer() string {
	if len(a.dropped) == 0 {
		return ""
	}
	ids := make([]string, len(a.dropped))
	for i, d := range a.dropped {
		ids[i] = strconv.Itoa(d.ID)
	}
	return "SecRuleRemoveById " + strings.Join(ids, " ") + "\n"
}

// Dropped lists the rules left out of the rule set, with why.
func (a *Accelerator) Dropped() []ruleplan.Dropped { return slices.Clone(a.dropped) }

func (a *Accelerator) foldedRules() int {
	n := 0
	for _, d := range a.dropped {
		if d.Kind == ruleplan.Folded {
			n++
		}
	}
	return n
}

// MarkersLeftOut counts the markers the WAF's rule files are read without.
func (a *Accelerator) MarkersLeftOut() int { return a.markersOut }

// fileMarkers keeps the markers read from a rule file: only a file's lines
// can be left out, the directives text reaches Coraza as it is.
func fileMarkers(markers []*seclang.Rule) []*seclang.Rule {
	return slices.DeleteFunc(markers, func(m *seclang.Rule) bool { return m.Directive.File == seclang.InlineFile })
}

// Built tells the accelerator its WAF exists: the generated rules have
// found their handler, which no longer needs to be registered.
func (a *Accelerator) Built() {
	if a.unregister != nil {
		a.unregister()
		a.unregister = nil
	}
}

// UseRuleIDs gives the accelerator the id of every rule of the built WAF
// (the rules it did not read, such as the module's own, included): a
// transaction's removals are then made as ranges of ids that hold nothing
// else. It must be called before the first transaction.
func (a *Accelerator) UseRuleIDs(ids []int) {
	a.ranges = newIDRanges(ids, a.candidates)
}

// Mode reports the mode.
func (a *Accelerator) Mode() Mode { return a.mode }

// RootFS returns the root filesystem to build the accelerated WAF on:
// Options.Root, marked so that its @pmFromFile rules use the compact phrase
// matcher (package phrases; same matches, a seventh of the memory), the
// very matchers the accelerator decides those rules with.
func (a *Accelerator) RootFS() fs.FS { return a.root }

// Summary describes the accelerated rule set for Envoy's log.
func (a *Accelerator) Summary() string {
	covered := 0
	for i := range a.candidates {
		if a.included.Has(i) {
			covered++
		}
	}
	return fmt.Sprintf("acceleration %s: %d rules of constant outcome dropped (%d folded into %d SecActions), %d unreachable markers left out, %d of %d candidate rules covered by %d collectors (%s engine), %d rules kept out, prepared in %s",
		a.mode, len(a.dropped), a.foldedRules(), a.folds, a.markersOut, covered, len(a.candidates), len(a.collectors), a.engine.Prefilter.Name(), len(a.excluded), a.buildTime.Round(time.Millisecond))
}

// Covered lists the ids of the candidate rules the accelerator may remove.
func (a *Accelerator) Covered() []int {
	var ids []int
	for i, c := range a.candidates {
		if a.included.Has(i) {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// Excluded lists the rules that looked like candidates but are kept, with why.
func (a *Accelerator) Excluded() []ruleplan.Exclusion { return slices.Clone(a.excluded) }

type discard struct{}

func (discard) Warn(string) {}
func (discard) Info(string) {}
