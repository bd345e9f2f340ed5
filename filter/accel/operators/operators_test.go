package operators_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"testing"

	coreruleset "github.com/corazawaf/coraza-coreruleset/v4"
	"github.com/corazawaf/coraza/v3"

	"github.com/wafsweep/wafsweep/filter/accel/operators"
	"github.com/wafsweep/wafsweep/filter/internal/crscorpus"
)

// corazaMatches builds a one-rule WAF around the operator and reports,
// value by value, whether Coraza's own operator matched. (In this test
// binary @pmFromFile is package plugin's replacement, built on Coraza's
// Aho-Corasick library: importing package operators registers it.)
func corazaMatches(t *testing.T, operator string, values []string) []bool {
	t.Helper()
	rule := fmt.Sprintf("SecRuleEngine On\nSecRule ARGS_GET:v \"%s\" \"id:1,phase:1,deny,status:403\"", strings.ReplaceAll(operator, `"`, `\"`))
	waf, err := coraza.NewWAF(coraza.NewWAFConfig().WithRootFS(coreruleset.FS).WithDirectives(rule))
	if err != nil {
		t.Fatalf("%s: %v", operator, err)
	}
	out := make([]bool, len(values))
	for i, v := range values {
		tx := waf.NewTransaction()
		tx.AddGetRequestArgument("v", v)
		out[i] = tx.ProcessRequestHeaders() != nil
		tx.Close()
	}
	return out
}

// values are CRS payloads, cut-up and case-changed versions of them, and
// random bytes: enough to see every operator match and not match.
func values(t *testing.T) []string {
	t.Helper()
	corpus := crscorpus.TestStrings(t, 2500, 400)
	r := rand.New(rand.NewPCG(1, 2))
	out := append([]string{"", "a", "\x00", "\xff"}, corpus...)
	for _, s := range corpus[:len(corpus)/4] {
		out = append(out, strings.ToUpper(s), s[r.IntN(len(s)):])
	}
	for range len(corpus) / 4 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		out = append(out, string(b))
	}
	return out
}

// corazaName spells the operators as Coraza registers them.
var corazaName = map[string]string{
	"pm": "pm", "pmfromfile": "pmFromFile", "pmf": "pmf", "detectxss": "detectXSS",
	"validatebyterange": "validateByteRange", "rx": "rx",
}

func TestDecidesEveryCRSOperatorAsCoraza(t *testing.T) {
	cands, err := crscorpus.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	vals := values(t)
	decided := map[string]int{}
	for _, c := range cands {
		if c.Expr != "" {
			continue // Go regexp candidates: packages exact and translate
		}
		m, err := operators.New(operators.Operator{Name: c.Operator, Argument: c.Argument, Dir: c.Dir, Root: coreruleset.FS})
		if err != nil {
			t.Errorf("rule %d (@%s %.40q): %v", c.ID, c.Operator, c.Argument, err)
			continue
		}
		arg := c.Argument
		if c.Operator == "pmfromfile" || c.Operator == "pmf" {
			arg = path.Join(c.Dir, arg) // the test rule is not in the rule's file
		}
		want := corazaMatches(t, "@"+corazaName[c.Operator]+" "+arg, vals)
		matched := 0
		for i, v := range vals {
			if got := m.MatchString(v); got != want[i] {
				t.Errorf("rule %d (@%s): %q: got %v, Coraza %v", c.ID, c.Operator, v, got, want[i])
			}
			if want[i] {
				matched++
			}
		}
		if matched == 0 {
			t.Errorf("rule %d (@%s): no value matched; the comparison says little", c.ID, c.Operator)
		}
		decided[c.Operator]++
	}
	for _, op := range []string{"pm", "pmfromfile", "detectxss", "validatebyterange", "rx"} {
		if decided[op] == 0 {
			t.Errorf("CRS has no decided @%s rule any more (decided: %v)", op, decided)
		}
	}
	t.Logf("decided %v on %d values", decided, len(vals))
}

// The arguments CRS does not use: byte lists with spaces and empty
// ranges, phrases in upper case and beyond ASCII.
func TestArgumentsParseAsCoraza(t *testing.T) {
	vals := append(values(t), "SELECT", "xUnIoNx", "Union All", "é", "É")
	for _, tt := range []struct{ name, arg string }{
		{"validatebyterange", "1-255"},
		{"validatebyterange", "32-126"},
		{"validatebyterange", "9,10,13,32-126"},
		{"validatebyterange", " 38, 44-46 ,48-58,61,65-90,95,97-122"},
		{"validatebyterange", "0"},
		{"validatebyterange", "255"},
		{"validatebyterange", "200-100,65"},
		{"pm", "union select"},
		{"pm", "UNION <script"},
		{"pm", "é ab abc"},
		{"pm", "a"},
	} {
		m, err := operators.New(operators.Operator{Name: tt.name, Argument: tt.arg})
		if err != nil {
			t.Fatalf("@%s %q: %v", tt.name, tt.arg, err)
		}
		want := corazaMatches(t, "@"+corazaName[tt.name]+" "+tt.arg, vals)
		for i, v := range vals {
			if got := m.MatchString(v); got != want[i] {
				t.Errorf("@%s %q on %q: got %v, Coraza %v", tt.name, tt.arg, v, got, want[i])
			}
		}
	}
}

func TestLeavesUndecidableOperatorsToCoraza(t *testing.T) {
	for _, op := range []operators.Operator{
		{Name: "streq", Argument: "a"},
		{Name: "validatebyterange"},             // matches every value
		{Name: "pm", Argument: "union  select"}, // the empty phrase matches everywhere
	} {
		if _, err := operators.New(op); !errors.Is(err, operators.ErrUndecided) {
			t.Errorf("%+v: error %v, want ErrUndecided", op, err)
		}
	}
	for _, op := range []operators.Operator{
		{Name: "validatebyterange", Argument: "1-256"},
		{Name: "validatebyterange", Argument: "a-b"},
		{Name: "pmfromfile", Argument: "missing.data", Dir: ".", Root: coreruleset.FS},
		{Name: "rx", Argument: "(unclosed"},
	} {
		if _, err := operators.New(op); err == nil {
			t.Errorf("%+v: no error", op)
		}
	}
}
