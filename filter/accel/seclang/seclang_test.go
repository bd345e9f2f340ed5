package seclang

import (
	"reflect"
	"testing"
	"testing/fstest"
)

func TestReadFollowsCorazasLineRules(t *testing.T) {
	root := fstest.MapFS{
		"rules/a.conf":   {Data: []byte("SecRule ARGS \"@rx a\" \"id:1,phase:2\"\n")},
		"rules/b.conf":   {Data: []byte("# comment\nSecMarker END\n")},
		"other/one.conf": {Data: []byte("SecAction \"id:3\"\n")},
	}
	text := "  # a comment\n" +
		"SecRuleEngine On\n" +
		"SecRule REQUEST_URI \\\n  \"@rx x\" \\\n  \"id:2,phase:1\"\n" +
		"Include rules/*.conf\n" +
		"Include other/one.conf\n"
	got, err := Read(root, text)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"secruleengine|On",
		`secrule|REQUEST_URI "@rx x" "id:2,phase:1"`,
		`secrule|ARGS "@rx a" "id:1,phase:2"`,
		"secmarker|END",
		"secaction|id:3", // Coraza strips the quotes around a whole argument list
	}
	var names []string
	for _, d := range got {
		names = append(names, d.Name+"|"+d.Args)
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("directives\n got %q\nwant %q", names, want)
	}
	// Where each starts and ends: the continued rule spans lines 3 to 5.
	wantLines := [][2]int{{2, 2}, {3, 5}, {1, 1}, {2, 2}, {1, 1}}
	for i, d := range got {
		if i < len(wantLines) && (d.FirstLine != wantLines[i][0] || d.Line != wantLines[i][1]) {
			t.Errorf("%s: lines %d-%d, want %d-%d", d.Name, d.FirstLine, d.Line, wantLines[i][0], wantLines[i][1])
		}
	}
}

func TestReadRejectsMissingInclude(t *testing.T) {
	if _, err := Read(fstest.MapFS{}, "Include nowhere.conf"); err == nil {
		t.Error("want an error for a missing include")
	}
}

func TestParseSecRule(t *testing.T) {
	tests := []struct {
		name, args string
		want       Rule
	}{
		{
			name: "explicit rx with transformations after t:none",
			args: `ARGS|!ARGS:id "@rx (?i)union\s+select" "id:942100,phase:2,block,t:lowercase,t:none,t:urlDecodeUni,multiMatch,tag:'paranoia-level/1',msg:'SQL, injection'"`,
			want: Rule{ID: 942100, Phase: 2, Operator: &Operator{Name: "rx", Argument: `(?i)union\s+select`},
				Transformations: []string{"urlDecodeUni"}, HasTNone: true, MultiMatch: true,
				Tags: []string{"paranoia-level/1"}, Msg: "SQL, injection"},
		},
		{
			name: "implicit rx, escaped quote, phase name",
			args: `REQUEST_HEADERS:Referer "a\"b" "id:5,phase:request,skip:2"`,
			want: Rule{ID: 5, Phase: 2, Operator: &Operator{Name: "rx", Argument: `a"b`}, Skip: 2},
		},
		{
			name: "negated operator, default phase",
			args: `REQUEST_METHOD "!@streq GET" "id:6"`,
			want: Rule{ID: 6, Phase: 2, Operator: &Operator{Name: "streq", Negated: true, Argument: "GET"}},
		},
		{
			name: "negated implicit rx",
			args: `ARGS "!^[a-z]+$" "id:7,phase:1"`,
			want: Rule{ID: 7, Phase: 1, Operator: &Operator{Name: "rx", Negated: true, Argument: "^[a-z]+$"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseSecRule(Directive{Name: "secrule", Args: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			if r.ID != tt.want.ID || r.Phase != tt.want.Phase || !reflect.DeepEqual(r.Operator, tt.want.Operator) ||
				!reflect.DeepEqual(r.Transformations, tt.want.Transformations) || r.HasTNone != tt.want.HasTNone ||
				r.MultiMatch != tt.want.MultiMatch || r.Skip != tt.want.Skip || r.Msg != tt.want.Msg ||
				!reflect.DeepEqual(r.Tags, tt.want.Tags) {
				t.Errorf("got %+v (op %+v)\nwant %+v (op %+v)", *r, *r.Operator, tt.want, *tt.want.Operator)
			}
		})
	}
}

func TestParseVariables(t *testing.T) {
	tests := []struct {
		in   string
		want []Variable
	}{
		{"ARGS", []Variable{{Name: "ARGS"}}},
		{"REQUEST_COOKIES|!REQUEST_COOKIES:/__utm/|&ARGS", []Variable{
			{Name: "REQUEST_COOKIES"}, {Name: "REQUEST_COOKIES", Key: "/__utm/", Negated: true}, {Name: "ARGS", Count: true}}},
		{"ARGS:/a|b/|XML:/*", []Variable{{Name: "ARGS", Key: "/a|b/"}, {Name: "XML", Key: "/*"}}},
		{"REQUEST_HEADERS:User-Agent|request_headers:Referer", []Variable{
			{Name: "REQUEST_HEADERS", Key: "User-Agent"}, {Name: "REQUEST_HEADERS", Key: "Referer"}}},
	}
	for _, tt := range tests {
		got, err := ParseVariables(tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.in, got, tt.want)
		}
	}
}

func TestParseAppliesChainsRemovalsAndUpdates(t *testing.T) {
	text := `SecRule ARGS "@rx a" "id:1,phase:2,chain,tag:t1"
SecRule ARGS "@rx b" "t:none"
SecRule ARGS "@rx c" "id:2,phase:2,tag:drop-me"
SecRule ARGS "@rx d" "id:3,phase:2,msg:'bye'"
SecRule ARGS "@rx e" "id:4,phase:2"
SecRule ARGS "@rx f" "id:5,phase:2"
SecRule ARGS "@rx g" "id:6,phase:2"
SecRule ARGS "@rx h" "id:7,phase:2"
SecMarker END
SecRuleRemoveByTag drop-me
SecRuleRemoveByMsg bye
SecRuleRemoveById 10-20 7
SecRuleUpdateTargetById 4 "!ARGS:x"
SecRuleUpdateTargetById 5 "REQUEST_HEADERS"
SecRuleUpdateActionById 6 "t:lowercase"
`
	ds, err := Read(fstest.MapFS{}, text)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Parse(ds)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, r := range rs.Rules {
		ids = append(ids, r.ID)
	}
	if want := []int{1, 4, 5, 6, 0}; !reflect.DeepEqual(ids, want) {
		t.Errorf("rules %v, want %v", ids, want)
	}
	if len(rs.Rules[0].Chain) != 1 || rs.Rules[0].Chain[0].Operator.Argument != "b" {
		t.Errorf("chain of rule 1: %+v", rs.Rules[0].Chain)
	}
	if !rs.TargetsNarrowed[4] || rs.TargetsAdded[4] || !rs.TargetsAdded[5] || !rs.ActionsUpdated(6) {
		t.Errorf("updates: narrowed %v added %v actions %v", rs.TargetsNarrowed, rs.TargetsAdded, rs.UpdatedActions)
	}
}
