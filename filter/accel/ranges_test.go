package accel

import (
	"fmt"
	"slices"
	"testing"

	"github.com/wafsweep/wafsweep/filter/accel/ruleplan"
)

// fakeRemovals records what a decision removed.
type fakeRemovals struct{ got []string }

func (f *fakeRemovals) RemoveRuleByIDRange(start, end int) {
	f.got = append(f.got, fmt.Sprintf("%d-%d", start, end))
}
func (f *fakeRemovals) RemoveRuleByID(id int) { f.got = append(f.got, fmt.Sprint(id)) }

func TestRemovalsAreRangesOverRemovedIDsOnly(t *testing.T) {
	ruleIDs := []int{0, 60, 10, 20, 30, 40, 50, 0, 70} // markers (0) and any order
	candidates := []ruleplan.Candidate{{ID: 20, Phase: 2}, {ID: 30, Phase: 2}, {ID: 50, Phase: 2}, {ID: 60, Phase: 2},
		{ID: 10, Phase: 2}, {ID: 99, Phase: 2}, // 99: not a rule of the WAF
		{ID: 40, Phase: 1}, {ID: 70, Phase: 1}} // phase 1's, between phase 2's
	for _, tc := range []struct {
		name    string
		ruleIDs []int
		phase   int
		removed []int // candidate indexes
		want    string
	}{
		{"neighbours", ruleIDs, 2, []int{0, 1}, "[20-30]"},
		{"a rule between keeps its place", ruleIDs, 2, []int{0, 2}, "[20-20 50-50]"},
		{"any order; 40, of another phase, still splits", ruleIDs, 2, []int{3, 2, 1, 0, 4}, "[10-30 50-60]"},
		{"an id the WAF lacks, alone (at once; a run when it ends)", ruleIDs, 2, []int{5, 0}, "[99 20-20]"},
		{"a kept candidate between", ruleIDs, 2, []int{4, 1}, "[10-10 30-30]"},
		{"the other phase", ruleIDs, 1, []int{6, 7}, "[40-40 70-70]"},
		{"none", ruleIDs, 2, nil, "[]"},
		{"a phase without candidates", ruleIDs, 4, []int{0}, "[]"},
		{"ids not known: one by one", nil, 2, []int{0, 1, 4}, "[20 30 10]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newIDRanges(tc.ruleIDs, candidates)
			f := &fakeRemovals{}
			r.removeInPhase(tc.phase, candidates, f, f, func(i int) bool { return slices.Contains(tc.removed, i) })
			if got := fmt.Sprint(f.got); got != tc.want {
				t.Errorf("removing %v: %s, want %s", tc.removed, got, tc.want)
			}
		})
	}
}

// Through Coraza: a rule that is no candidate (negated) between two
// candidates in id order keeps its place when both are removed, and the
// candidates' removal still holds.
func TestRangeRemovalsKeepTheRulesBetween(t *testing.T) {
	const between = `SecRuleEngine On
SecRule ARGS "@rx attack-one" "id:2001,phase:2,deny,status:403,log,t:none"
SecRule ARGS_NAMES "!@rx ^[a-z]+$" "id:2002,phase:2,deny,status:403,log,t:none"
SecRule ARGS "@rx attack-three" "id:2003,phase:2,deny,status:403,log,t:none"
`
	w, a, _ := buildRules(t, Prefilter, nil, between, nil)
	if got := fmt.Sprint(a.Covered()); got != "[2001 2003]" {
		t.Fatalf("covered %v, want [2001 2003]", got)
	}
	a.UseRuleIDs([]int{2001, 2002, 2003})
	checkDecisions(t, w, a, []decision{
		{"q=hello", 0, 2},
		{"Q1=hello", 2002, 2}, // the rule between still runs
		{"q=attack-three", 2003, 1},
	})
}
