package accel

import (
	"fmt"
	"testing"
)

// fakeRemovals records what a decision removed.
type fakeRemovals struct{ got []string }

func (f *fakeRemovals) RemoveRuleByIDRange(start, end int) {
	f.got = append(f.got, fmt.Sprintf("%d-%d", start, end))
}
func (f *fakeRemovals) RemoveRuleByID(id int) { f.got = append(f.got, fmt.Sprint(id)) }

func TestRemovalsAreRangesOverRemovedIDsOnly(t *testing.T) {
	ruleIDs := []int{0, 60, 10, 20, 30, 40, 50, 0} // markers (0) and any order
	candidates := []int{20, 30, 50, 60, 10, 99}    // 99: not a rule of the WAF
	r := newIDRanges(ruleIDs, candidates)
	for _, tc := range []struct {
		removed []int // candidate indexes
		want    string
	}{
		{[]int{0, 1}, "[20-30]"},                // neighbours
		{[]int{0, 2}, "[20-20 50-50]"},          // 40 keeps its place between them
		{[]int{3, 2, 1, 0, 4}, "[10-30 50-60]"}, // any order; 40 still splits
		{[]int{5, 0}, "[99 20-20]"},             // an id the WAF lacks, alone
		{nil, "[]"},
	} {
		f := &fakeRemovals{}
		r.remove(f, f, tc.removed, nil)
		if got := fmt.Sprint(f.got); got != tc.want {
			t.Errorf("removing %v: %s, want %s", tc.removed, got, tc.want)
		}
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
