package ruleplan

import (
	"reflect"
	"testing"
)

func analyze(t *testing.T, text string) Plan {
	t.Helper()
	return Analyze(ruleSet(t, nil, text))
}

func TestAnalyzeFindsCandidatesAndSaysWhyOthersStay(t *testing.T) {
	text := `SecRule ARGS "@rx union" "id:1,phase:2,t:none,t:lowercase,tag:'paranoia-level/2'"
SecRule ARGS "@rx union" "id:2,phase:1,t:none"
SecRule ARGS "!@rx union" "id:3,phase:2,t:none"
SecRule ARGS "@rx union" "id:4,phase:2,t:lowercase"
SecRule TX:foo "@rx union" "id:5,phase:2,t:none"
SecRule &ARGS "@rx 1" "id:6,phase:2,t:none"
SecRule ARGS "@rx \xff\xfe" "id:7,phase:2,t:none"
SecRule ARGS "@streq union" "id:8,phase:2,t:none"
SecRule REQUEST_HEADERS:User-Agent|ARGS_NAMES "@rx curl" "id:9,phase:2,t:none,multiMatch,chain"
SecRule TX:x "@eq 1" "t:none"
SecRule ARGS "@rx a" "id:10,phase:2,t:none"
SecRuleUpdateTargetById 10 "REQUEST_BODY"
SecRule ARGS "@rx b" "id:11,phase:2,t:none"
SecRuleUpdateTargetById 11 "!ARGS:safe"
SecRule ARGS "@rx c" "id:12,phase:2,t:none"
SecRuleUpdateActionById 12 "t:urlDecode"
SecRule ARGS "@pm foo bar" "id:13,phase:2,t:none,t:urlDecodeUni"
SecRule ARGS "@detectXSS" "id:14,phase:2,t:none"
SecRule ARGS "!@pmFromFile words.data" "id:15,phase:2,t:none"
SecRule REQUEST_BODY "@rx union" "id:16,phase:1,t:none"
SecRule ARGS "@rx union" "id:17,phase:3,t:none"
`
	p := analyze(t, text)
	var ids []int
	for _, c := range p.Candidates {
		ids = append(ids, c.ID)
	}
	if want := []int{1, 2, 7, 9, 11, 13, 14}; !reflect.DeepEqual(ids, want) {
		t.Errorf("candidates %v, want %v", ids, want)
	}
	byID := map[int]Candidate{}
	for _, c := range p.Candidates {
		byID[c.ID] = c
	}
	if c := byID[1]; c.Expr != "(?sm)union" || !reflect.DeepEqual(c.Transformations, []string{"lowercase"}) || c.Paranoia != 2 {
		t.Errorf("candidate 1: %+v", c)
	}
	if c := byID[7]; c.Operator != "rx" || c.Expr != "" || c.Argument != `\xff\xfe` {
		t.Errorf("candidate 7, a binary @rx, should keep its argument and have no Go expression: %+v", c)
	}
	if byID[2].Phase != 1 || byID[1].Phase != 2 {
		t.Errorf("phases: candidate 2 %d, candidate 1 %d", byID[2].Phase, byID[1].Phase)
	}
	if !byID[9].MultiMatch {
		t.Errorf("candidate 9 lost multiMatch: %+v", byID[9])
	}
	if c := byID[13]; c.Operator != "pm" || c.Argument != "foo bar" || c.Expr != "" || c.Dir != "." {
		t.Errorf("candidate 13: %+v", c)
	}
	reasons := map[int]string{}
	for _, e := range p.Excluded {
		reasons[e.ID] = e.Reason
	}
	for id, want := range map[int]string{
		3: "negated operator", 4: "no t:none (default transformations would apply)",
		5: "target TX can change during phase 2", 6: "counts a collection (&ARGS)",
		15: "negated operator", 16: "target REQUEST_BODY can change during phase 1",
		10: "targets extended by SecRuleUpdateTarget", 12: "actions changed by SecRuleUpdateActionById",
	} {
		if reasons[id] != want {
			t.Errorf("rule %d: reason %q, want %q", id, reasons[id], want)
		}
	}
}

// Coraza does not count removed rules against skip:N, so removing a rule
// the skip would have landed on moves the skip onto the next rule. The
// window runs N rules, or to the next SecMarker when that is further.
func TestSkipWindowsStayOut(t *testing.T) {
	text := `SecRule ARGS "@rx a" "id:1,phase:2,t:none"
SecRule REQBODY_PROCESSOR "@streq JSON" "id:2,phase:2,pass,t:none,skip:1"
SecRule ARGS "@rx b" "id:3,phase:1,t:none"
SecRule ARGS "@rx c" "id:4,phase:2,t:none"
SecRule ARGS "@rx d" "id:5,phase:2,t:none"
SecMarker END
SecRule ARGS "@rx e" "id:6,phase:2,t:none"
`
	p := analyze(t, text)
	var ids []int
	for _, c := range p.Candidates {
		ids = append(ids, c.ID)
	}
	if want := []int{1, 3, 6}; !reflect.DeepEqual(ids, want) {
		t.Errorf("candidates %v, want %v (4 is skipped by 2, 5 is before the marker; 3 is phase 1's)", ids, want)
	}
}

func TestMatchesArbitraryBytesDecidesAsCoraza(t *testing.T) {
	tests := []struct {
		expr string
		want bool
	}{
		{`abc`, false},
		{`\xff`, true},
		{`\x{ff}x`, true},
		{`\xc3\xa9`, false}, // é spelled as bytes is valid UTF-8
		{`\x41\x42`, false},
		{`[\x00-\x7f]`, false},
		{`[\x80-\xff]`, true},
		{`a\x`, false},
		{`\x{100}`, false},
	}
	for _, tt := range tests {
		if got := MatchesArbitraryBytes("(?sm)" + tt.expr); got != tt.want {
			t.Errorf("MatchesArbitraryBytes(%q) = %v, want %v", tt.expr, got, tt.want)
		}
	}
}
