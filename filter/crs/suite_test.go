package crs

import (
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	crstests "github.com/corazawaf/coraza-coreruleset/v4/tests"
	schema "github.com/coreruleset/ftw-tests-schema/v2/types"
	"github.com/coreruleset/go-ftw/v2/test"
	"go.yaml.in/yaml/v3"
)

// loadSuite reads every test file of the embedded CRS regression suite and
// splits it into one FTWTest per stage of each test case:
//   - go-ftw aborts a whole run on a request error (no response, no log
//     marker), so a unit that cannot finish must cost only itself;
//   - go-ftw's RunTest scores a test case by its last stage only, so a
//     failing earlier stage would pass unnoticed; classify fails a test case
//     when any of its stages fails. Stages are independent requests unless
//     one saves a cookie for the next, so such a test case stays whole (none
//     in CRS v4.25.0 does).
func loadSuite() ([]*test.FTWTest, error) {
	var units []*test.FTWTest
	err := fs.WalkDir(crstests.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := fs.ReadFile(crstests.FS, path)
		if err != nil {
			return fmt.Errorf("reading CRS test %s: %w", path, err)
		}
		file, err := test.GetTestFromYaml(data, path)
		if err != nil {
			return fmt.Errorf("parsing CRS test %s: %w", path, err)
		}
		for _, tc := range file.Tests {
			for _, stages := range independentStages(tc) {
				one := tc
				one.Stages = stages
				unit := *file
				unit.Tests = []schema.Test{one}
				units = append(units, &unit)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(units) == 0 {
		return nil, fmt.Errorf("no test cases in the embedded CRS regression suite")
	}
	return units, nil
}

// independentStages splits a test case's stages into runs that need no
// state from each other.
func independentStages(tc schema.Test) [][]schema.Stage {
	for _, stage := range tc.Stages {
		if stage.Input.SaveCookie != nil && *stage.Input.SaveCookie {
			return [][]schema.Stage{tc.Stages}
		}
	}
	runs := make([][]schema.Stage, 0, len(tc.Stages))
	for i := range tc.Stages {
		runs = append(runs, tc.Stages[i:i+1:i+1])
	}
	return runs
}

// ignoreGroups are the sections of testdata/ignored.yaml: who a known
// failure is charged to.
var ignoreGroups = []string{"coraza", "envoy", "module"}

// ignoreEntry is one known failure.
type ignoreEntry struct {
	group  string // coraza, envoy or module
	reason string
	// proof is what an envoy entry's test must show through Envoy with
	// the rules blocking (TestEnvoyIgnoresStopTheAttack): an ignore of a
	// test Envoy rejects or rewrites is only harmless if the attack never
	// reaches the backend. Nil for the other groups.
	proof *ignoreProof
}

// Proof classes of an envoy ignore.
const (
	// Envoy answers the request itself (400, 426, ...); the backend gets
	// nothing.
	proofRejected = "rejected-by-envoy"
	// The WAF blocks the request as Envoy normalised it (403); the backend
	// gets nothing.
	proofBlocked = "blocked-after-normalisation"
	// The request reaches the backend, but without the attack (Envoy
	// removed or rewrote it): upstream checks say what arrived.
	proofHarmless = "passed-harmless"
	// The attack reaches the backend: documented and asserted as it is,
	// so that a change is noticed.
	proofKnownGap = "known-gap"
)

var proofClasses = []string{proofRejected, proofBlocked, proofHarmless, proofKnownGap}

// ignoreProof is the expected outcome of replaying an envoy ignore.
type ignoreProof struct {
	class string
	// status and details are the answer the client gets: the HTTP status
	// and Envoy's response code details (%RESPONSE_CODE_DETAILS%, from the
	// access log), written "426 low_version" in the list.
	status  int
	details string
	// explain says why what arrives is harmless (passed-harmless) or what
	// the gap is (known-gap).
	explain string
	// The upstream checks, for requests that reach the backend: headers
	// the test sent that the backend must not get (nor their values,
	// anywhere in what it reads), and regular expressions that must and
	// must not match the bytes the backend read.
	stripped      []string
	upstreamHas   []*regexp.Regexp
	upstreamLacks []*regexp.Regexp
}

// reachesBackend is whether the class lets the request through.
func (p *ignoreProof) reachesBackend() bool {
	return p.class == proofHarmless || p.class == proofKnownGap
}

// rawIgnoreEntry is an entry written as a mapping rather than a bare reason.
type rawIgnoreEntry struct {
	Reason        string   `yaml:"reason"`
	Proof         string   `yaml:"proof"`
	Answer        string   `yaml:"answer"`
	Harmless      string   `yaml:"harmless"`
	Gap           string   `yaml:"gap"`
	Stripped      []string `yaml:"stripped"`
	UpstreamHas   []string `yaml:"upstream_has"`
	UpstreamLacks []string `yaml:"upstream_lacks"`
}

// rawIgnoreKeys are the keys rawIgnoreEntry knows: a misspelt key would
// otherwise be dropped silently, and with it a check.
var rawIgnoreKeys = []string{"reason", "proof", "answer", "harmless", "gap", "stripped", "upstream_has", "upstream_lacks"}

var (
	testIDPattern = regexp.MustCompile(`^\d+-\d+$`)
	answerPattern = regexp.MustCompile(`^([1-5]\d\d) (\S+)$`)
)

// loadIgnored reads the known failures: group -> test id -> entry. An entry
// is its reason, or (envoy entries, which must have a proof) a mapping with
// the reason and the proof. Ids are exact (go-ftw's own ignore keys are
// unanchored regular expressions, where "920100-4" would also swallow
// 920100-40).
// suiteAndIgnoreList loads the embedded CRS suite and the ignore list, or
// fails the test.
func suiteAndIgnoreList(t testing.TB) ([]*test.FTWTest, map[string]ignoreEntry) {
	t.Helper()
	suite, err := loadSuite()
	if err != nil {
		t.Fatal(err)
	}
	ignored, err := loadIgnored(ignoreListPath)
	if err != nil {
		t.Fatal(err)
	}
	return suite, ignored
}

func loadIgnored(path string) (map[string]ignoreEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the ignore list: %w", err)
	}
	ignored, err := parseIgnored(data)
	if err != nil {
		return nil, fmt.Errorf("ignore list %s: %w", path, err)
	}
	return ignored, nil
}

func parseIgnored(data []byte) (map[string]ignoreEntry, error) {
	var groups map[string]map[string]yaml.Node
	if err := yaml.Unmarshal(data, &groups); err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	ignored := map[string]ignoreEntry{}
	for group, entries := range groups {
		if !slices.Contains(ignoreGroups, group) {
			return nil, fmt.Errorf("unknown section %q, want one of %v", group, ignoreGroups)
		}
		for id, node := range entries {
			if !testIDPattern.MatchString(id) {
				return nil, fmt.Errorf("%q is not a test id like 920100-4", id)
			}
			entry, err := parseIgnoreEntry(group, &node)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", id, err)
			}
			if prev, dup := ignored[id]; dup {
				return nil, fmt.Errorf("%s is listed under both %s and %s", id, prev.group, group)
			}
			ignored[id] = entry
		}
	}
	return ignored, nil
}

func parseIgnoreEntry(group string, node *yaml.Node) (ignoreEntry, error) {
	entry := ignoreEntry{group: group}
	var raw rawIgnoreEntry
	switch node.Kind {
	case yaml.ScalarNode:
		raw.Reason = node.Value
	case yaml.MappingNode:
		for i := 0; i < len(node.Content); i += 2 {
			if key := node.Content[i].Value; !slices.Contains(rawIgnoreKeys, key) {
				return entry, fmt.Errorf("unknown key %q, want one of %v", key, rawIgnoreKeys)
			}
		}
		if err := node.Decode(&raw); err != nil {
			return entry, err
		}
	default:
		return entry, fmt.Errorf("want a reason or a mapping with reason and proof")
	}
	if strings.TrimSpace(raw.Reason) == "" {
		return entry, fmt.Errorf("no reason")
	}
	entry.reason = raw.Reason
	if group != "envoy" {
		if !raw.onlyReason() {
			return entry, fmt.Errorf("only envoy entries have a proof")
		}
		return entry, nil
	}
	proof, err := parseProof(raw)
	if err != nil {
		return entry, err
	}
	entry.proof = proof
	return entry, nil
}

func (r rawIgnoreEntry) onlyReason() bool {
	return r.Proof == "" && r.Answer == "" && r.Harmless == "" && r.Gap == "" &&
		len(r.Stripped) == 0 && len(r.UpstreamHas) == 0 && len(r.UpstreamLacks) == 0
}

// parseProof checks that an envoy entry's proof is complete and consistent
// with its class: a rejection is Envoy's own answer, a block is the WAF's,
// and a request that reaches the backend says what arrived and why that is
// harmless, or what the gap is.
func parseProof(raw rawIgnoreEntry) (*ignoreProof, error) {
	if !slices.Contains(proofClasses, raw.Proof) {
		return nil, fmt.Errorf("proof %q, want one of %v", raw.Proof, proofClasses)
	}
	p := &ignoreProof{class: raw.Proof, stripped: raw.Stripped}
	m := answerPattern.FindStringSubmatch(raw.Answer)
	if m == nil {
		return nil, fmt.Errorf("answer %q, want a status and Envoy's response code details, e.g. \"426 low_version\"", raw.Answer)
	}
	p.status, _ = strconv.Atoi(m[1])
	p.details = m[2]
	for _, expr := range raw.UpstreamHas {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("upstream_has: %w", err)
		}
		p.upstreamHas = append(p.upstreamHas, re)
	}
	for _, expr := range raw.UpstreamLacks {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("upstream_lacks: %w", err)
		}
		p.upstreamLacks = append(p.upstreamLacks, re)
	}
	checks := len(p.stripped) + len(p.upstreamHas) + len(p.upstreamLacks)
	fromWAF := strings.HasPrefix(p.details, "corazawaf_")
	switch p.class {
	case proofRejected:
		if fromWAF || p.details == viaUpstream || p.status < 400 {
			return nil, fmt.Errorf("%s: answer %q is not an Envoy rejection", p.class, raw.Answer)
		}
	case proofBlocked:
		if p.status != 403 || !strings.HasPrefix(p.details, "corazawaf_denied_rule_") {
			return nil, fmt.Errorf("%s: answer %q is not the WAF's 403", p.class, raw.Answer)
		}
	case proofHarmless, proofKnownGap:
		if p.details != viaUpstream {
			return nil, fmt.Errorf("%s: answer %q does not come from the backend (%s)", p.class, raw.Answer, viaUpstream)
		}
		if checks == 0 {
			return nil, fmt.Errorf("%s: no upstream check (stripped, upstream_has, upstream_lacks) says what arrived", p.class)
		}
	}
	switch {
	case p.class == proofHarmless && strings.TrimSpace(raw.Harmless) == "":
		return nil, fmt.Errorf("%s: no harmless: why what arrives carries no attack", p.class)
	case p.class == proofKnownGap && strings.TrimSpace(raw.Gap) == "":
		return nil, fmt.Errorf("%s: no gap: what reaches the backend", p.class)
	case p.class != proofHarmless && raw.Harmless != "", p.class != proofKnownGap && raw.Gap != "":
		return nil, fmt.Errorf("%s: harmless is for %s, gap for %s", p.class, proofHarmless, proofKnownGap)
	case !p.reachesBackend() && checks > 0:
		return nil, fmt.Errorf("%s: upstream checks, but nothing reaches the backend", p.class)
	}
	p.explain = raw.Harmless + raw.Gap
	return p, nil
}

// viaUpstream is Envoy's response code details for an answer from the backend.
const viaUpstream = "via_upstream"
