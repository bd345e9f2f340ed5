package ruleplan

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestFolds(t *testing.T) {
	// Rules 1-3 live in a file, as CRS's do; 1 and 2 set defaults, 3
	// derives a value from them.
	const setters = `SecRule &TX:a "@eq 0" "id:1,phase:1,pass,nolog,setvar:tx.a=5"
SecRule &TX:b "@eq 0" "id:2,phase:1,pass,nolog,setvar:'tx.b=GET HEAD',setvar:tx.a=+2"
SecAction "id:3,phase:1,pass,nolog,setvar:'tx.c=%{tx.a}',setvar:!tx.gone"
`
	// A rule between 1 and 2 that could see the run's values early, or
	// end the phase before 2 and 3, splits the run: 2 and 3 still fold.
	const split = `SecAction "id:2,phase:1,pass,nolog,setvar:'tx.b=GET HEAD',setvar:'tx.a=7',setvar:'tx.c=7',setvar:'!tx.gone'"`
	const whole = `SecAction "id:1,phase:1,pass,nolog,setvar:'tx.a=7',setvar:'tx.b=GET HEAD',setvar:'tx.c=7',setvar:'!tx.gone'"`
	for _, c := range []struct {
		name, before, between, after string
		wantFolded                   []int
		wantDirective                string
	}{
		{name: "a run", wantFolded: []int{2, 3}, wantDirective: whole},
		{name: "a rule between that reads no TX and passes", between: `SecRule ARGS "@rx x" "id:50,phase:1,pass,nolog,setvar:ip.x=1"`,
			wantFolded: []int{2, 3}, wantDirective: whole},
		{name: "a rule between that reads TX", between: `SecRule TX:a|ARGS "@rx 5" "id:50,phase:1,pass,nolog"`, wantFolded: []int{3}, wantDirective: split},
		{name: "a rule between with a macro", between: `SecRule ARGS "@streq %{tx.a}" "id:50,phase:1,pass,nolog"`, wantFolded: []int{3}, wantDirective: split},
		{name: "a rule between that may block", between: `SecRule ARGS "@rx x" "id:50,phase:1,block"`, wantFolded: []int{3}, wantDirective: split},
		{name: "a rule between with no disruptive action", between: `SecRule ARGS "@rx x" "id:50,phase:1,nolog"`, wantFolded: []int{3}, wantDirective: split},
		{name: "a rule between updated to deny", between: `SecRule ARGS "@rx x" "id:50,phase:1,pass,nolog"`, after: `SecRuleUpdateActionById 50 "deny"`,
			wantFolded: []int{3}, wantDirective: split},
		{name: "a rule between in another phase", between: `SecRule TX:a "@eq 7" "id:50,phase:2,deny"`, wantFolded: []int{2, 3}, wantDirective: whole},
		{name: "a value that would read as arithmetic", before: `SecAction "id:9,phase:1,pass,nolog,setvar:tx.a=-9"`},
		{name: "a value with a quote stays out", between: `SecAction "id:50,phase:1,pass,nolog,setvar:'tx.q=it\'s'"`, wantFolded: []int{3}, wantDirective: split},
		{name: "a value with a space at an end stays out", between: `SecAction "id:50,phase:1,pass,nolog,setvar:'tx.q=x '"`, wantFolded: []int{3}, wantDirective: split},
		{name: "a skip:N may count a folded rule", before: `SecRule ARGS "@rx x" "id:9,phase:1,pass,nolog,skip:3"`},
		{name: "a rule whose actions are updated", after: `SecRuleUpdateActionById 1 "log"`},
		// 9's skip:1 counts 50, or, were 50 removed, the next rule Coraza
		// holds: not 51, which never matches and is dropped, but 2. So 2
		// stays where it is, and starts the run.
		{name: "a skip:N over a dropped rule", between: `SecRule ARGS "@rx x" "id:9,phase:1,pass,nolog,skip:1"
SecRule ARGS "@rx y" "id:50,phase:1,pass,nolog"
SecRule TX:a "@eq 99" "id:51,phase:1,pass,nolog"`, after: `SecRule ARGS "@rx z" "id:70,phase:1,pass,nolog,ctl:ruleRemoveById=50"`,
			wantFolded: []int{3}, wantDirective: split},
	} {
		t.Run(c.name, func(t *testing.T) {
			lines := strings.SplitAfter(setters, "\n")
			file := lines[0] + c.between + "\n" + strings.Join(lines[1:], "")
			root := fstest.MapFS{"setters.conf": {Data: []byte(file)}}
			got := Constant(ruleSet(t, root, c.before+"\nInclude setters.conf\n"+c.after))
			var folded []int
			directive := ""
			for _, f := range got.Folds {
				folded = append(folded, f.Folded...)
				directive = f.Directive
			}
			if !slices.Equal(folded, c.wantFolded) || directive != c.wantDirective {
				t.Errorf("folded %v into\n%s\nwant %v into\n%s", folded, directive, c.wantFolded, c.wantDirective)
			}
			for _, d := range got.Dropped {
				if d.Kind == Folded && !slices.Contains(c.wantFolded, d.ID) {
					t.Errorf("rule %d dropped as folded", d.ID)
				}
			}
		})
	}
}

func TestFoldsStartInAFile(t *testing.T) {
	// The first rule of a run is rewritten where it is written: not in
	// the directives text.
	got := Constant(ruleSet(t, nil, `SecRule &TX:a "@eq 0" "id:1,phase:1,pass,nolog,setvar:tx.a=5"
SecRule &TX:b "@eq 0" "id:2,phase:1,pass,nolog,setvar:tx.b=1"`))
	if len(got.Folds) != 0 {
		t.Errorf("folded %+v, want nothing", got.Folds)
	}
}

// TestFoldsOfCRS pins CRS's initialization at paranoia 1: its default
// setters fold into one SecAction.
func TestFoldsOfCRS(t *testing.T) {
	got := Constant(crsRuleSet(t, "SecResponseBodyAccess Off"))
	kinds := map[int]DropKind{}
	for _, d := range got.Dropped {
		kinds[d.ID] = d.Kind
	}
	for _, f := range got.Folds {
		t.Logf("rule %d takes %d rules: %s", f.First.ID, len(f.Folded), f.Directive)
	}
	if len(got.Folds) == 0 {
		t.Fatal("no fold")
	}
	for _, id := range []int{901120, 901125, 901160} {
		if kinds[id] != Folded {
			t.Errorf("rule %d: %v, want folded", id, kinds[id])
		}
	}
	if _, dropped := kinds[got.Folds[0].First.ID]; dropped {
		t.Errorf("the first rule of a fold, %d, is dropped", got.Folds[0].First.ID)
	}
}
