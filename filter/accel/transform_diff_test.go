package accel

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/experimental/plugins"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"

	"github.com/wafsweep/wafsweep/filter/accel/plugin"
	"github.com/wafsweep/wafsweep/filter/accel/seclang"
	"github.com/wafsweep/wafsweep/filter/internal/crscorpus"
)

// The differential transformation test: for every transformation chain
// CRS uses, the values the accelerator's collector hands to a candidate
// must be the values Coraza itself evaluates for a rule with that chain.
// Both sides run in Coraza: the collectors as the accelerator generates
// them, and, in a WAF of their own, one recording rule per chain.

var (
	transformValues = flag.Int("accel.transform-values", 3000, "values the deterministic transformation differential test generates")
	transformSeed   = flag.Uint64("accel.transform-seed", 1, "seed of the transformation differential test")
)

// chain is a transformation chain as a rule writes it.
type chain struct {
	names      []string
	multiMatch bool
}

func (c chain) String() string {
	s := "t:none"
	for _, n := range c.names {
		s += ",t:" + n
	}
	if c.multiMatch {
		s += ",multiMatch"
	}
	return s
}

// crsChains returns every distinct chain of the CRS rules (chained rules
// included) that start with t:none, the only ones the accelerator takes.
func crsChains() ([]chain, error) {
	ds, err := seclang.Read(coreruleset.FS, "Include @crs-setup.conf.example\nInclude @owasp_crs/*.conf")
	if err != nil {
		return nil, fmt.Errorf("reading CRS: %w", err)
	}
	rs, err := seclang.Parse(ds)
	if err != nil {
		return nil, fmt.Errorf("parsing CRS: %w", err)
	}
	seen := map[string]chain{}
	var add func(r *seclang.Rule)
	add = func(r *seclang.Rule) {
		if r.HasTNone {
			c := chain{names: r.Transformations, multiMatch: r.MultiMatch}
			seen[strings.ToLower(c.String())] = c
		}
		for _, child := range r.Chain {
			add(child)
		}
	}
	for _, r := range rs.Rules {
		add(r)
	}
	keys := slices.Sorted(maps.Keys(seen))
	out := make([]chain, len(keys))
	for i, k := range keys {
		out[i] = seen[k]
	}
	return out, nil
}

// recordOperator is a test operator that never matches and reports every
// value its rule evaluates to the recorder named by its argument.
const recordOperator = "wafsweeprecord"

var (
	recordOnce sync.Once
	recordMu   sync.Mutex
	recorders  = map[string]func(rule int, value string){}
)

// recordOp's argument is "recorder:rule".
type recordOp struct {
	key  string
	rule int
}

func (o recordOp) Evaluate(_ plugintypes.TransactionState, value string) bool {
	recordMu.Lock()
	f := recorders[o.key]
	recordMu.Unlock()
	f(o.rule, value)
	return false
}

func registerRecorder(key string, f func(rule int, value string)) {
	recordOnce.Do(func() {
		plugins.RegisterOperator(recordOperator, func(o plugintypes.OperatorOptions) (plugintypes.Operator, error) {
			key, rule, _ := strings.Cut(strings.TrimSpace(o.Arguments), ":")
			n, err := strconv.Atoi(rule)
			if err != nil {
				return nil, fmt.Errorf("@%s %q: want recorder:rule", recordOperator, o.Arguments)
			}
			return recordOp{key: key, rule: n}, nil
		})
	})
	recordMu.Lock()
	defer recordMu.Unlock()
	recorders[key] = f
}

// transformDiff holds both sides of the comparison.
type transformDiff struct {
	chains    []chain
	acc       *Accelerator
	collected coraza.WAF // the accelerator's generated rules
	reference coraza.WAF // one recording rule per chain
	// seen[collector] and want[chain] are the values of the current
	// transaction (one at a time).
	seen map[int]map[string]bool
	want map[int]map[string]bool
}

// chainRuleID is the id of chain k's candidate and recording rules.
func chainRuleID(k int) int { return 7000 + k }

func newTransformDiff(chains []chain, key string) (*transformDiff, error) {
	d := &transformDiff{chains: chains}
	var cands, recs strings.Builder
	for k, c := range chains {
		// "^" matches every value: every candidate is decided, so every
		// chain gets a collector.
		fmt.Fprintf(&cands, "SecRule ARGS_GET \"@rx ^\" \"id:%d,phase:2,pass,nolog,%s\"\n", chainRuleID(k), c)
		fmt.Fprintf(&recs, "SecRule ARGS_GET \"@%s %s:%d\" \"id:%d,phase:2,pass,nolog,%s\"\n", recordOperator, key, k, chainRuleID(k), c)
	}
	acc, err := New(Options{Mode: Prefilter, Root: fstest.MapFS{}, Directives: cands.String(), Engine: PureGoEngine})
	if err != nil {
		return nil, fmt.Errorf("accelerating the chains: %w", err)
	}
	if len(acc.Covered()) != len(chains) {
		return nil, fmt.Errorf("%d of %d chains covered; excluded: %v", len(acc.Covered()), len(chains), acc.Excluded())
	}
	d.acc = acc
	acc.observe = func(_ plugintypes.TransactionState, collector int, value string) { add(d.seen, collector, value) }
	registerRecorder(key, func(rule int, value string) { add(d.want, rule, value) })
	if d.collected, err = coraza.NewWAF(coraza.NewWAFConfig().WithDirectives("SecRuleEngine On\n" + acc.Directives())); err != nil {
		return nil, fmt.Errorf("building the collectors: %w", err)
	}
	acc.Built()
	if d.reference, err = coraza.NewWAF(coraza.NewWAFConfig().WithDirectives("SecRuleEngine On\n" + recs.String())); err != nil {
		return nil, fmt.Errorf("building the recording rules: %w", err)
	}
	return d, nil
}

func add(m map[int]map[string]bool, k int, v string) {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	m[k][v] = true
}

// evaluate runs one value through a WAF as the only query argument.
func evaluate(w coraza.WAF, value string) {
	tx := w.NewTransaction()
	tx.AddGetRequestArgument("q", value)
	tx.ProcessRequestHeaders()
	_, _ = tx.ProcessRequestBody()
	tx.ProcessLogging()
	_ = tx.Close()
}

// differences returns how the collectors' values differ from the values
// each chain's rule evaluates: a missing value is a difference (the
// candidate could match it unseen); an extra one is a difference only for
// a collector of exactly the candidate's chain and multiMatch, which must
// see exactly what the rule sees. (A candidate without multiMatch
// evaluates one value; its collector also sees the intermediate ones.)
func (d *transformDiff) differences(value string) []string {
	d.seen, d.want = map[int]map[string]bool{}, map[int]map[string]bool{}
	evaluate(d.collected, value)
	evaluate(d.reference, value)
	var out []string
	for i, cand := range d.acc.candidates {
		k := cand.ID - chainRuleID(0)
		n := d.acc.collectorOf[i]
		col := d.acc.collectors[n]
		got, want := d.seen[n], d.want[k]
		for v := range want {
			if !got[v] {
				out = append(out, fmt.Sprintf("%s: collector %d never sees %q", d.chains[k], n, v))
			}
		}
		exact := d.chains[k].multiMatch && slices.Equal(col.transformations, d.chains[k].names)
		for v := range got {
			if exact && !want[v] {
				out = append(out, fmt.Sprintf("%s: collector %d sees %q, which the rule never evaluates", d.chains[k], n, v))
			}
		}
	}
	slices.Sort(out)
	return out
}

// sharedDiff builds the comparison over CRS's chains once per test binary:
// the fuzz target and the deterministic tests share it.
var sharedDiff = sync.OnceValues(func() (*transformDiff, error) {
	chains, err := crsChains()
	if err != nil {
		return nil, err
	}
	return newTransformDiff(chains, "crs")
})

func crsTransformDiff(t testing.TB) *transformDiff {
	t.Helper()
	return must(t, sharedDiff)
}

// must returns what a shared builder made, or fails the test with its error.
func must[T any](t testing.TB, build func() (T, error)) T {
	t.Helper()
	v, err := build()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// twinDiff compares each honest twin the collectors use with the Coraza
// transformation it stands for: rule 2k runs pair k's original, rule 2k+1
// its twin, both without multiMatch, so each evaluates exactly the output.
type twinDiff struct {
	pairs [][2]string
	waf   coraza.WAF
	got   map[int]map[string]bool
}

func honestTwins(t testing.TB) *twinDiff {
	t.Helper()
	// Building the accelerator registers the twins with Coraza.
	crsTransformDiff(t)
	return must(t, sharedTwins)
}

var sharedTwins = sync.OnceValues(func() (*twinDiff, error) {
	d := &twinDiff{pairs: [][2]string{
		{"htmlEntityDecode", plugin.HonestHTMLEntityDecode},
		{"removeWhitespace", plugin.HonestRemoveWhitespace},
	}}
	var rules strings.Builder
	rules.WriteString("SecRuleEngine On\n")
	for k, p := range d.pairs {
		for j, name := range p {
			rule := 2*k + j
			fmt.Fprintf(&rules, "SecRule ARGS_GET \"@%s twins:%d\" \"id:%d,phase:2,pass,nolog,t:none,t:%s\"\n", recordOperator, rule, 7900+rule, name)
		}
	}
	registerRecorder("twins", func(rule int, value string) { add(d.got, rule, value) })
	var err error
	d.waf, err = coraza.NewWAF(coraza.NewWAFConfig().WithDirectives(rules.String()))
	return d, err
})

// differences returns each pair whose two rules evaluated different values.
func (d *twinDiff) differences(value string) []string {
	d.got = map[int]map[string]bool{}
	evaluate(d.waf, value)
	var out []string
	for k, p := range d.pairs {
		if orig, twin := d.got[2*k], d.got[2*k+1]; !maps.Equal(orig, twin) {
			out = append(out, fmt.Sprintf("%s evaluates %q, %s %q", p[0], slices.Collect(maps.Keys(orig)), p[1], slices.Collect(maps.Keys(twin))))
		}
	}
	return out
}

// transformSeeds are values every run checks, named for the report.
var transformSeeds = []struct{ name, value string }{
	{"length-preserving htmlEntityDecode (the prefilter bypass)", crscorpus.Bypass},
	{"entity that decodes one byte longer", "&nGt;"},
	{"entity that decodes to as many bytes", "&acE;<script>"},
	{"invalid UTF-8 that removeWhitespace rewrites", "t\x85\xb3v<script>"},
	{"numeric entity of NUL", "&#0;<script>"},
	{"percent-encoded entity", "%26lt%3bscript%26gt%3b"},
	{"invalid UTF-8 around a tag", "\xff<scr\xc0ipt>\xed\xa0\x80"},
	{"NUL inside a keyword", "sel\x00ect"},
	{"JS and CSS escapes", `\x3cscript\u003e \3c script\3e`},
	{"base64 of a tag", "PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=="},
	{"empty", ""},
}

func TestCollectorsSeeWhatTheirRulesSee(t *testing.T) {
	d := crsTransformDiff(t)
	t.Logf("%d CRS chains, %d collectors", len(d.chains), len(d.acc.collectors))
	checkDifferences(t, d.differences, 0)
}

// checkDifferences runs the named seeds and *transformValues adversarial
// values (random stream `stream` of the seed) through differences, and
// reports what differs, at most ten random values.
func checkDifferences(t *testing.T, differences func(string) []string, stream uint64) {
	t.Helper()
	for _, s := range transformSeeds {
		for _, diff := range differences(s.value) {
			t.Errorf("%s: %s", s.name, diff)
		}
	}
	rng := rand.New(rand.NewPCG(*transformSeed, stream))
	payloads := crscorpus.TestStrings(t, 2000, 200)
	failed := 0
	for i := 0; i < *transformValues && failed < 10; i++ {
		v := crscorpus.Adversarial(rng, payloads)
		if diffs := differences(v); len(diffs) > 0 {
			failed++
			t.Errorf("value %d %q: %d differences, first: %s", i, v, len(diffs), diffs[0])
		}
	}
}

// TestHonestTwinsReproduceCoraza: the collectors' twins of the
// transformations that misreport changes must produce Coraza's output.
func TestHonestTwinsReproduceCoraza(t *testing.T) {
	checkDifferences(t, honestTwins(t).differences, 1)
}

// FuzzCollectorsSeeWhatTheirRulesSee is the long form of both tests above:
// go test -run '^$' -fuzz FuzzCollectorsSeeWhatTheirRulesSee -fuzztime
// 1000000x ./filter/accel/
func FuzzCollectorsSeeWhatTheirRulesSee(f *testing.F) {
	d := crsTransformDiff(f)
	twins := honestTwins(f)
	for _, s := range transformSeeds {
		f.Add(s.value)
	}
	rng := rand.New(rand.NewPCG(1, 0))
	payloads, err := crscorpus.Strings(500, 200)
	if err != nil {
		f.Fatal(err)
	}
	for range 200 {
		f.Add(crscorpus.Adversarial(rng, payloads))
	}
	f.Fuzz(func(t *testing.T, value string) {
		diffs := append(twins.differences(value), d.differences(value)...)
		if len(diffs) > 0 {
			t.Fatalf("%d differences, first: %s", len(diffs), strings.Join(diffs[:min(len(diffs), 5)], "\n"))
		}
	})
}
