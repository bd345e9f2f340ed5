package crs

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreruleset/go-ftw/v2/test"
)

// ignoreListPath holds the known failures, each with its reason.
const ignoreListPath = "testdata/ignored.yaml"

func TestCRSRegression(t *testing.T) {
	if testing.Short() {
		t.Skip("the CRS regression suite sends ~14,000 requests through Envoy")
	}
	suite, err := loadSuite()
	if err != nil {
		t.Fatal(err)
	}
	ignored, err := loadIgnored(ignoreListPath)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, filterConfig(t), startReflector(t))
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
	r := classify(suite, out, ignored)
	elapsed := time.Since(start).Round(time.Second)

	for _, id := range r.stale {
		t.Logf("ignored test %s passes now: drop it from %s (%s)", id, ignoreListPath, ignored[id].reason)
	}
	for _, id := range r.unknownIgnores {
		t.Logf("%s lists %s, which is not in the suite (or was excluded by $%s)", ignoreListPath, id, includeEnv)
	}
	t.Logf("known failures by cause: %s", r.knownByGroup())
	summary := fmt.Sprintf("CRS regression: %d passed, %d failed (ignored: %d), %d skipped, in %s",
		len(r.passed), len(r.known)+len(r.unexpected), len(r.known), r.skipped, elapsed)
	t.Log(summary)
	fmt.Println(summary)
	if len(r.unexpected) > 0 {
		t.Errorf("%d unexpected failures (not in %s):\n%s\nEnvoy log ends:\n%s",
			len(r.unexpected), ignoreListPath, r.describe(r.unexpected), p.logTail(20))
	}
}

// results sorts the test cases of one run.
type results struct {
	passed         []string
	known          []string // failed, and listed in the ignore list
	unexpected     []string // failed, and not listed
	stale          []string // listed, but passed
	unknownIgnores []string // listed, but never run
	skipped        int

	ignored map[string]ignoreEntry
	byID    map[string]*test.FTWTest
	out     runOutcome
}

func classify(suite []*test.FTWTest, out runOutcome, ignored map[string]ignoreEntry) results {
	r := results{ignored: ignored, byID: map[string]*test.FTWTest{}, out: out, skipped: len(out.stats.Skipped)}
	for _, tc := range suite {
		r.byID[tc.Tests[0].IdString()] = tc
	}
	failed := append(slices.Clone(out.stats.Failed), out.stats.ForcedFail...)
	failed = append(failed, slices.Collect(maps.Keys(out.errors))...)
	for _, id := range failed {
		if _, ok := ignored[id]; ok {
			r.known = append(r.known, id)
		} else {
			r.unexpected = append(r.unexpected, id)
		}
	}
	ran := map[string]bool{}
	for _, id := range slices.Concat(failed, out.stats.Success, out.stats.ForcedPass) {
		ran[id] = true
	}
	for _, id := range slices.Concat(out.stats.Success, out.stats.ForcedPass) {
		r.passed = append(r.passed, id)
		if _, ok := ignored[id]; ok {
			r.stale = append(r.stale, id)
		}
	}
	for id := range ignored {
		if !ran[id] {
			r.unknownIgnores = append(r.unknownIgnores, id)
		}
	}
	for _, list := range [][]string{r.known, r.unexpected, r.stale, r.unknownIgnores} {
		slices.Sort(list)
	}
	return r
}

// knownByGroup counts the known failures per cause, e.g. "coraza 7, envoy 40".
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

// describe says, per failed test, what it expected and which rules the log
// showed, which is usually enough to tell a rule gap from a proxy effect.
func (r results) describe(ids []string) string {
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "  %s", id)
		tc, ok := r.byID[id]
		if ok {
			fmt.Fprintf(&b, " (%s)", tc.FileName)
		}
		if err, ok := r.out.errors[id]; ok {
			fmt.Fprintf(&b, ": %v", err)
		}
		b.WriteString("\n")
		if !ok {
			continue
		}
		logged := r.out.stats.TriggeredRules[id]
		for i, stage := range tc.Tests[0].Stages {
			want := stage.Output
			fmt.Fprintf(&b, "    stage %d: want status %d, ids %v, no ids %v", i, want.Status, want.Log.ExpectIds, want.Log.NoExpectIds)
			if want.Log.MatchRegex != "" || want.Log.NoMatchRegex != "" {
				fmt.Fprintf(&b, ", regex %q, no regex %q", want.Log.MatchRegex, want.Log.NoMatchRegex)
			}
			if i < len(logged) {
				fmt.Fprintf(&b, "; logged %v", logged[i])
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}
