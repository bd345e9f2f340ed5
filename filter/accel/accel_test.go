package accel

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
	"github.com/corazawaf/coraza/v3/types"

	"github.com/wafsweep/wafsweep/filter/accel/exact"
	"github.com/wafsweep/wafsweep/filter/accel/multimatch"
	"github.com/wafsweep/wafsweep/filter/internal/crscorpus"
)

// rules is a small rule set with two candidates (1001, 1002) and a rule
// that stays (1003: phase 1).
const rules = `SecRuleEngine On
SecRule ARGS "@rx (?i)union\s+select" "id:1001,phase:2,deny,status:403,log,t:none,t:lowercase,msg:'sqli'"
SecRule ARGS|REQUEST_HEADERS:User-Agent "@rx <script" "id:1002,phase:2,deny,status:403,log,t:none,t:urlDecodeUni,msg:'xss'"
SecRule ARGS "@rx evil" "id:1003,phase:1,deny,status:403,log,t:none"
`

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Warn(m string) { l.add(m) }
func (l *logLines) Info(m string) { l.add(m) }
func (l *logLines) add(m string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, m)
}
func (l *logLines) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func build(t *testing.T, mode Mode, engine EngineFactory) (coraza.WAF, *Accelerator, *logLines) {
	t.Helper()
	return buildRules(t, mode, engine, rules, fstest.MapFS{})
}

func buildRules(t *testing.T, mode Mode, engine EngineFactory, rules string, root fs.FS) (coraza.WAF, *Accelerator, *logLines) {
	t.Helper()
	log := &logLines{}
	a, err := New(Options{Mode: mode, Root: root, Directives: rules, Engine: engine, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	w, err := coraza.NewWAF(coraza.NewWAFConfig().WithRootFS(a.RootFS()).WithDirectives(a.Directives() + rules))
	a.Built()
	if err != nil {
		t.Fatalf("coraza rejects the generated rules: %v\n%s", err, a.Directives())
	}
	return w, a, log
}

// run sends one request with query args and returns the matched rule ids.
func run(t *testing.T, w coraza.WAF, a *Accelerator, query string) (matched []int, it *types.Interruption, disagreements int) {
	t.Helper()
	tx := w.NewTransaction()
	tx.ProcessURI("/?"+query, "GET", "HTTP/1.1")
	tx.AddRequestHeader("User-Agent", "test")
	if it = tx.ProcessRequestHeaders(); it == nil {
		var err error
		if it, err = tx.ProcessRequestBody(); err != nil {
			t.Fatal(err)
		}
	}
	tx.ProcessLogging()
	disagreements = a.Finish(tx)
	for _, m := range tx.MatchedRules() {
		matched = append(matched, m.Rule().ID())
	}
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	return matched, it, disagreements
}

// decision is what one request should come to: the rule that blocks it (0
// for none) and how many candidates the accelerator removes.
type decision struct {
	query    string
	wantRule int
	removed  uint64
}

func checkDecisions(t *testing.T, w coraza.WAF, a *Accelerator, tests []decision) {
	t.Helper()
	for _, tt := range tests {
		before := a.Stats().Removed
		_, it, _ := run(t, w, a, tt.query)
		got := 0
		if it != nil {
			got = it.RuleID
		}
		if got != tt.wantRule {
			t.Errorf("%s: blocked by %d, want %d", tt.query, got, tt.wantRule)
		}
		if removed := a.Stats().Removed - before; removed != tt.removed {
			t.Errorf("%s: %d rules removed, want %d", tt.query, removed, tt.removed)
		}
	}
}

func TestPrefilterRemovesOnlyRulesThatCannotMatch(t *testing.T) {
	w, a, _ := build(t, Prefilter, nil)
	if got := a.Covered(); fmt.Sprint(got) != "[1001 1002 1003]" {
		t.Fatalf("covered %v, want [1001 1002 1003]", got)
	}
	tests := []decision{
		{"q=hello", 0, 3},
		{"q=1+UNION+SELECT+2", 1001, 2},
		{"q=%3Cscript%3E", 1002, 2}, // seen only after t:urlDecodeUni
		{"q=evil", 1003, 0},         // decided in phase 1, which blocks before phase 2 runs
	}
	checkDecisions(t, w, a, tests)
	if n := stateCount(a); n != 0 {
		t.Errorf("%d transaction states left behind", n)
	}
}

// unreportedChangeRules pair each candidate without multiMatch with a
// longer chain it prefixes, so both share one multiMatch collector: with
// Coraza's own htmlEntityDecode and removeWhitespace, it never saw the
// values they change without saying so; with their honest twins
// (plugin.HonestChain), it must.
const unreportedChangeRules = `SecRuleEngine On
SecRule ARGS "@rx (?i)'\)\s*;\s*alert\(" "id:3001,phase:2,deny,status:403,log,t:none,t:urlDecodeUni,t:htmlEntityDecode"
SecRule ARGS "@rx nothing-here" "id:3002,phase:2,pass,log,t:none,t:urlDecodeUni,t:htmlEntityDecode,t:jsDecode"
SecRule ARGS "@rx a` + "\uFFFD" + `b" "id:3003,phase:2,deny,status:403,log,t:none,t:removeWhitespace"
SecRule ARGS "@rx nothing-here" "id:3004,phase:2,pass,log,t:none,t:removeWhitespace,t:lowercase"
`

// TestCandidatesSeeChangesTheirTransformationsDoNotReport holds the named
// regression cases of the accelerator's transformation semantics.
func TestCandidatesSeeChangesTheirTransformationsDoNotReport(t *testing.T) {
	for _, engine := range []struct {
		name string
		f    EngineFactory
	}{{"default", nil}, {"pure Go", PureGoEngine}} {
		t.Run(engine.name, func(t *testing.T) {
			w, a, _ := buildRules(t, Prefilter, engine.f, unreportedChangeRules, fstest.MapFS{})
			checkDecisions(t, w, a, []decision{
				// htmlEntityDecode keeps the length (the Envoy bypass):
				// "&apos;" and "&#97;" shrink by nine bytes, nine "&nGt;"
				// grow by nine.
				{"q=" + url.QueryEscape(crscorpus.Bypass), 3001, 3},
				// removeWhitespace turns the invalid byte into U+FFFD
				// (the rule has the character itself: "\x{FFFD}" would
				// make Coraza compile it as a byte expression).
				{"q=a%FFb", 3003, 3},
				{"q=hello", 0, 4},
			})
		})
	}
}

// operatorRules hold one candidate of each operator decided besides Go
// expressions, and one the accelerator leaves to Coraza (@pm with an empty
// phrase, which matches everything).
const operatorRules = `SecRuleEngine On
SecRule ARGS "@pm doc.cookie .innerHTML" "id:2001,phase:2,deny,status:403,log,t:none,t:urlDecodeUni"
SecRule ARGS "@pmFromFile words.data" "id:2002,phase:2,deny,status:403,log,t:none,t:lowercase"
SecRule ARGS "@detectXSS" "id:2003,phase:2,deny,status:403,log,t:none,t:urlDecodeUni,t:htmlEntityDecode"
SecRule ARGS "@rx \xbc[^\xbe>]*[\xbe>]" "id:2004,phase:2,deny,status:403,log,t:none"
SecRule ARGS "@validateByteRange 32-126" "id:2005,phase:2,deny,status:403,log,t:none"
SecRule ARGS "@pm a  b" "id:2006,phase:2,pass,log,t:none"
`

func TestDecidesOperatorsBesidesGoExpressions(t *testing.T) {
	root := &countingFS{MapFS: fstest.MapFS{
		"rules/words.data":     {Data: []byte("# words\npasswd\nshadow\n")},
		"rules/operators.conf": {Data: []byte(operatorRules)},
	}}
	w, a, _ := buildRules(t, Prefilter, nil, "Include rules/operators.conf\n", root)
	if n := root.reads["rules/words.data"]; n != 1 {
		t.Errorf("the phrase file was read %d times: the accelerator and the WAF's operator should share one matcher", n)
	}
	if got := a.Covered(); fmt.Sprint(got) != "[2001 2002 2003 2004 2005]" {
		t.Fatalf("covered %v, want [2001 2002 2003 2004 2005]; excluded %v", got, a.Excluded())
	}
	if ex := a.Excluded(); len(ex) != 1 || ex[0].ID != 2006 || !strings.Contains(ex[0].Reason, "empty phrase") {
		t.Errorf("excluded %+v, want 2006 for its empty phrase", ex)
	}
	tests := []decision{ // of the five candidates, all but those matching are removed
		{"q=hello", 0, 5},
		{"q=x%2521DOC.COOKIE", 2001, 4}, // a phrase only after t:urlDecodeUni, in another case
		{"q=/etc/PASSWD", 2002, 4},
		{"q=%253Cscript%253Ealert(1)%253C/script%253E", 2003, 4},
		{"q=%BCscript%BE", 2004, 3}, // a binary expression; the bytes are out of 2005's range too
		{"q=tab%09", 2005, 4},
	}
	checkDecisions(t, w, a, tests)
}

// countingFS counts the reads of each file.
type countingFS struct {
	fstest.MapFS
	reads map[string]int
}

func (c *countingFS) ReadFile(name string) ([]byte, error) {
	if c.reads == nil {
		c.reads = map[string]int{}
	}
	c.reads[name]++
	return c.MapFS.ReadFile(name)
}

// blind is an engine that rules out every expression for every value: a
// broken matcher, which shadow mode must catch.
func blind(exprs []string) (Engine, error) {
	return Engine{Prefilter: nothing{len(exprs)}, Direct: make([]exact.Matcher, len(exprs))}, nil
}

type nothing struct{ n int }

func (nothing) MayMatch(_ string, hits []int32, s []byte) ([]int32, []byte) { return hits, s }
func (nothing) Filtered(int) bool                                           { return true }
func (nothing) Name() string                                                { return "blind" }

var _ multimatch.Prefilter = nothing{}

func TestShadowCountsWhatABrokenMatcherWouldHaveMissed(t *testing.T) {
	w, a, log := build(t, Shadow, blind)
	matched, it, disagreements := run(t, w, a, "q=1+UNION+SELECT+2")
	if it == nil || it.RuleID != 1001 {
		t.Fatalf("shadow mode must not change the verdict: interruption %+v, matched %v", it, matched)
	}
	// The value check catches the miss (and keeps the rule, so the
	// rule-level check does not count it a second time).
	if disagreements != 1 || a.Stats().Disagreements != 1 {
		t.Errorf("disagreements %d (total %d), want 1", disagreements, a.Stats().Disagreements)
	}
	if !log.has("acceleration disagreement") {
		t.Errorf("no disagreement logged: %q", log.lines)
	}
	if _, _, d := run(t, w, a, "q=hello"); d != 0 {
		t.Errorf("benign request: %d disagreements", d)
	}
}

func TestShadowAgreesWithTheRealEngine(t *testing.T) {
	w, a, _ := build(t, Shadow, nil)
	for _, q := range []string{"q=hello", "q=1+UNION+SELECT+2", "q=%3Cscript%3E", "a=b&c=select+union"} {
		if _, _, d := run(t, w, a, q); d != 0 {
			t.Errorf("%s: %d disagreements", q, d)
		}
	}
}

// hidden wraps a transaction so that RemoveRuleByID is out of reach, as it
// would be if Coraza renamed or dropped the method.
type hidden struct{ plugintypes.TransactionState }

func TestFallsBackToExactEvaluationWithoutRemoveRuleByID(t *testing.T) {
	w, a, log := build(t, Prefilter, nil)
	tx := w.NewTransaction()
	defer tx.Close()
	state := tx.(plugintypes.TransactionState)
	a.Decide(hidden{state}, 2)
	if a.Stats().Fallbacks != 1 || a.Stats().Removed != 0 {
		t.Errorf("stats %+v, want one fallback and no removal", a.Stats())
	}
	if !log.has("has no RemoveRuleByID") {
		t.Errorf("fallback not logged: %q", log.lines)
	}
	if n := stateCount(a); n != 0 {
		t.Errorf("%d transaction states left behind", n)
	}
}

// A ctl removing the generated rules in phase 1 runs after phase 1's own
// collectors and decider: phase 1's candidate (1003) is decided on all it
// sees, phase 2's are left alone.
func TestNothingIsRemovedWhenTheGeneratedRulesAreRemoved(t *testing.T) {
	text := rules + `SecAction "id:1,phase:1,pass,nolog,ctl:ruleRemoveById=1990000000-1990000999"` + "\n"
	a, err := New(Options{Mode: Prefilter, Root: fstest.MapFS{}, Directives: text})
	if err != nil {
		t.Fatal(err)
	}
	w, err := coraza.NewWAF(coraza.NewWAFConfig().WithDirectives(a.Directives() + text))
	a.Built()
	if err != nil {
		t.Fatal(err)
	}
	run(t, w, a, "q=hello")
	if a.Stats().Removed != 1 {
		t.Errorf("%d rules removed, want phase 1's one: phase 2's collectors never ran", a.Stats().Removed)
	}
}

func TestModeAndRegistrationErrors(t *testing.T) {
	if _, err := ParseMode("fast"); err == nil {
		t.Error("ParseMode accepts an unknown mode")
	}
	if m, err := ParseMode(""); err != nil || m != Off {
		t.Errorf("ParseMode(\"\") = %v, %v", m, err)
	}
	_, err := coraza.NewWAF(coraza.NewWAFConfig().WithDirectives(`SecRule ARGS "@accelCollect nobody:0" "id:5,phase:2"`))
	if err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Errorf("an unregistered token must be rejected, got %v", err)
	}
	_, err = New(Options{Mode: Prefilter, Root: fstest.MapFS{}, Directives: "Include missing.conf"})
	if err == nil || errors.Unwrap(err) == nil {
		t.Errorf("a missing include must be a wrapped error, got %v", err)
	}
}

func stateCount(a *Accelerator) int { return a.Tracked() }

// countingMatcher counts the values an exact matcher is asked about.
type countingMatcher struct {
	exact.Matcher
	calls *int
}

func (c countingMatcher) MatchString(v string) bool { *c.calls++; return c.Matcher.MatchString(v) }

// A value that a collector sees again (three arguments with one value) is
// decided once, and the decision is the same: the repeated value that
// matches still blocks.
func TestARepeatedValueIsDecidedOnce(t *testing.T) {
	const digits = `SecRuleEngine On
SecRule ARGS "@rx ^\d{3}$" "id:1004,phase:2,deny,status:403,log,t:none"
`
	calls := 0
	counting := func(exprs []string) (Engine, error) {
		e, err := PureGoEngine(exprs)
		for i, d := range e.Direct {
			if d != nil {
				e.Direct[i] = countingMatcher{d, &calls}
			}
		}
		return e, err
	}
	w, a, _ := buildRules(t, Prefilter, counting, digits, fstest.MapFS{})
	for _, tt := range []struct {
		query     string
		wantRule  int
		wantCalls int
	}{
		{"a=xyz&b=xyz&c=xyz", 0, 1},
		{"a=xyz&b=uvw&c=xyz", 0, 2},
		{"a=123&b=123", 1004, 1},
	} {
		calls = 0
		_, it, _ := run(t, w, a, tt.query)
		got := 0
		if it != nil {
			got = it.RuleID
		}
		if got != tt.wantRule || calls != tt.wantCalls {
			t.Errorf("%s: blocked by %d after %d matcher calls, want %d after %d", tt.query, got, calls, tt.wantRule, tt.wantCalls)
		}
	}
}
