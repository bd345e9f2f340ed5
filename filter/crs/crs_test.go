package crs

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	schema "github.com/coreruleset/ftw-tests-schema/v2/types"
	"github.com/coreruleset/go-ftw/v2/test"

	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor/moduleflavortest"
)

// ignoreListPath holds the known failures, each with its reason.
const ignoreListPath = "testdata/ignored.yaml"

func TestCRSRegression(t *testing.T) {
	if testing.Short() {
		t.Skip("the CRS regression suite sends ~14,000 requests through Envoy")
	}
	suite, ignored := suiteAndIgnoreList(t)
	var p *proxy
	if spec, ok := moduleflavortest.FromEnv(t); ok {
		// Another module: its failures are the measurement, scored against
		// our ignore list like ours.
		p = startEnvoy(t, envoySetup{flavor: &spec, filterConfig: moduleflavortest.Config(t, spec, crsTestDirectives), upstreamPort: startReflector(t)})
	} else {
		p = startProxy(t, filterConfig(t), startReflector(t))
	}
	rc, err := newRunnerConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkLoopbackOnly(rc, suite, p.port); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	out, err := runSuite(rc, suite)
	if err != nil {
		t.Fatal(err)
	}
	p.failIfEnvoyDied(t)
	r := classify(suite, out, ignored)
	elapsed := time.Since(start).Round(100 * time.Millisecond)

	for _, id := range r.stale {
		t.Logf("ignored test %s passes now: drop it from %s (%s)", id, ignoreListPath, ignored[id].reason)
	}
	for _, id := range r.unknownIgnores {
		t.Logf("%s lists %s, which is not a test of the CRS suite: drop it", ignoreListPath, id)
	}
	t.Logf("known failures by cause: %s", r.knownByGroup())
	summary := fmt.Sprintf("CRS regression: %d passed, %d failed (ignored: %d), %d skipped, in %s",
		len(r.passed), len(r.known)+len(r.unexpected), len(r.known), r.skipped, elapsed)
	t.Log(summary)
	fmt.Println(summary)
	if len(r.unexpected) > 0 {
		t.Errorf("%d unexpected failures (not in %s):\n%s", len(r.unexpected), ignoreListPath, r.describe(r.unexpected))
	}
	if len(out.errors) > 0 {
		// Unfinished tests may mean Envoy died or stopped logging.
		t.Logf("Envoy log ends:\n%s", p.logTail(10))
	}
}

// results sorts the test cases of one run by test id.
type results struct {
	passed         []string
	known          []string // failed, and listed in the ignore list
	unexpected     []string // failed, and not listed
	stale          []string // listed, but passed
	unknownIgnores []string // listed, but not a test of the suite
	skipped        int      // excluded by $CRS_INCLUDE

	ignored map[string]ignoreEntry
	stages  map[string][]*test.FTWTest // test id -> its units (see loadSuite), in order
	out     runOutcome
}

// classify scores each test case: it fails when any of its stages failed or
// could not finish.
func classify(suite []*test.FTWTest, out runOutcome, ignored map[string]ignoreEntry) results {
	r := results{ignored: ignored, stages: map[string][]*test.FTWTest{}, out: out}
	for _, unit := range suite {
		id := unit.Tests[0].IdString()
		r.stages[id] = append(r.stages[id], unit)
	}
	failed := map[string]bool{}
	for _, id := range slices.Concat(out.stats.Failed, out.stats.ForcedFail, slices.Collect(maps.Keys(out.errors))) {
		failed[id] = true
	}
	ran := maps.Clone(failed)
	for _, id := range slices.Concat(out.stats.Success, out.stats.ForcedPass) {
		ran[id] = true
	}
	for _, id := range slices.Sorted(maps.Keys(ran)) {
		_, listed := ignored[id]
		switch {
		case failed[id] && listed:
			r.known = append(r.known, id)
		case failed[id]:
			r.unexpected = append(r.unexpected, id)
		case listed:
			r.passed = append(r.passed, id)
			r.stale = append(r.stale, id)
		default:
			r.passed = append(r.passed, id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(ignored)) {
		if _, inSuite := r.stages[id]; !inSuite {
			r.unknownIgnores = append(r.unknownIgnores, id)
		}
	}
	r.skipped = len(r.stages) - len(ran)
	return r
}

// knownByGroup counts the known failures per cause, e.g. "coraza 6, envoy 51".
func (r results) knownByGroup() string {
	counts := map[string]int{}
	for _, id := range r.known {
		counts[r.ignored[id].group]++
	}
	parts := make([]string, 0, len(ignoreGroups))
	for _, g := range ignoreGroups {
		parts = append(parts, fmt.Sprintf("%s %d", g, counts[g]))
	}
	return strings.Join(parts, ", ")
}

// describe says, per failed test, what each stage expected and which rules
// the log showed, which is usually enough to tell a rule gap from a proxy
// effect. CRS_FTW_DEBUG=1 adds the raw requests and responses.
func (r results) describe(ids []string) string {
	var b strings.Builder
	for _, id := range ids {
		units := r.stages[id]
		fmt.Fprintf(&b, "  %s", id)
		if len(units) > 0 {
			fmt.Fprintf(&b, " (%s)", units[0].FileName)
		}
		if err, ok := r.out.errors[id]; ok {
			fmt.Fprintf(&b, ": %v", err)
		}
		b.WriteString("\n")
		// Rule lists are recorded per finished stage; they line up with the
		// stages unless one could not finish.
		logged := r.out.stats.TriggeredRules[id]
		var stages []schema.Stage
		for _, unit := range units {
			stages = append(stages, unit.Tests[0].Stages...)
		}
		for i, stage := range stages {
			want := stage.Output
			fmt.Fprintf(&b, "    stage %d: want status %d, ids %v, no ids %v", i, want.Status, want.Log.ExpectIds, want.Log.NoExpectIds)
			if want.Log.MatchRegex != "" || want.Log.NoMatchRegex != "" {
				fmt.Fprintf(&b, ", regex %q, no regex %q", want.Log.MatchRegex, want.Log.NoMatchRegex)
			}
			if len(logged) == len(stages) {
				fmt.Fprintf(&b, "; logged %v", logged[i])
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}
