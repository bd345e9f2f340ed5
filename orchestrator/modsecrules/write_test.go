package modsecrules

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSplitDirectives(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		names []string // "" for comments and blanks
		lines []int    // physical lines per logical line
	}{
		{"one per line", "SecRuleEngine On\nSecRequestBodyAccess Off\n", []string{"SecRuleEngine", "SecRequestBodyAccess"}, []int{1, 1}},
		{"continuations", "SecRule ARGS \"@rx a\" \\\n    \"id:1,\\\n    pass\"\nSecMarker END", []string{"SecRule", "SecMarker"}, []int{3, 1}},
		{"comments and blanks", "# c\n\n  SecAction \"id:2\"\n", []string{"", "", "SecAction"}, []int{1, 1, 1}},
		{"chained rule without actions", "SecRule A \"@eq 1\" \"id:3,chain\"\n    SecRule B \"@eq 1\"\nSecRule C \"@eq 1\" \"id:4\"", []string{"SecRule", "SecRule", "SecRule"}, []int{1, 1, 1}},
		{"CRLF", "SecRuleEngine On\r\nSecAuditEngine Off\r\n", []string{"SecRuleEngine", "SecAuditEngine"}, []int{1, 1}},
		{"dangling continuation", "SecAction \\", []string{"SecAction"}, []int{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := splitDirectives(tc.text)
			var names []string
			var lines []int
			for _, d := range got {
				names, lines = append(names, d.name), append(lines, len(d.lines))
			}
			if !slices.Equal(names, tc.names) || !slices.Equal(lines, tc.lines) {
				t.Fatalf("names %q lines %v, want %q %v", names, lines, tc.names, tc.lines)
			}
		})
	}
}

func TestDirectiveTextAndArgs(t *testing.T) {
	d := splitDirectives("Include \\\n   \"/a/b.conf\"")[0]
	if d.text() != `Include "/a/b.conf"` || unquote(d.args()) != "/a/b.conf" {
		t.Fatalf("text %q args %q", d.text(), d.args())
	}
}

func TestTranslate(t *testing.T) {
	tests := []struct {
		name        string
		text        string
		want        []string // substrings of the output
		notWant     []string
		wantChanges []string // "dropped: <directive>" or "rewritten: <directive>"
		wantErr     string
	}{
		{
			name: "blank line after every directive",
			text: "SecRule A \"@eq 1\" \"id:3,chain\"\n    SecRule B \"@eq 1\"\nSecRule C \"@eq 1\" \"id:4\"",
			want: []string{"SecRule A \"@eq 1\" \"id:3,chain\"\n\n    SecRule B \"@eq 1\"\n\nSecRule C"},
		},
		{
			name: "continuation lines kept together",
			text: "SecRule ARGS \"@rx a\" \\\n    \"id:1,pass\"",
			want: []string{"SecRule ARGS \"@rx a\" \\\n    \"id:1,pass\"\n\n"},
		},
		{
			name:        "Coraza-only directives dropped with the reason",
			text:        "SecRxPreFilter On\nSecRequestBodyInMemoryLimit 131072\nsecresponsebodyjsondepthlimit 10\nSecRuleEngine On",
			want:        []string{"# wafsweep dropped for ModSecurity: SecRxPreFilter On", "because Coraza-only", "SecRuleEngine On"},
			notWant:     []string{"\nSecRxPreFilter On", "\nSecRequestBodyInMemoryLimit"},
			wantChanges: []string{"dropped: SecRxPreFilter On", "dropped: SecRequestBodyInMemoryLimit 131072", "dropped: secresponsebodyjsondepthlimit 10"},
		},
		{
			name: "directives both accept are kept",
			text: "SecArgumentsLimit 1000\nSecRequestBodyJsonDepthLimit 1024",
			want: []string{"SecArgumentsLimit 1000\n", "SecRequestBodyJsonDepthLimit 1024\n"},
		},
		{
			name: "embedded names resolve as in the module, to extracted paths without the at sign",
			text: "Include @coraza.conf\nInclude @crs-setup.conf\nInclude @owasp_crs/REQUEST-9*-BLOCKING-EVALUATION.conf",
			want: []string{"/crs/coraza.conf\n", "/crs/crs-setup.conf\n", "/crs/owasp_crs/REQUEST-949-BLOCKING-EVALUATION.conf\n"},
			// The module's @coraza.conf includes the recommended configuration
			// and adds the argument-flood rules.
			notWant: []string{"@"},
			wantChanges: []string{
				"dropped: SecRequestBodyInMemoryLimit 131072",
				`rewritten: SecRule ARGUMENTS_LIMIT_REACHED "@eq 1" "id:200004,phase:1,t:none,log,deny,status:400,msg:'Argument limit reached (query or path arguments)'"`,
				`rewritten: SecRule ARGUMENTS_LIMIT_REACHED "@eq 1" "id:200005,phase:2,t:none,log,deny,status:400,msg:'Argument limit reached (body arguments)'"`,
			},
		},
		{
			name:        "coraza-coreruleset's own names too, also behind a directory",
			text:        "Include @coraza.conf-recommended\nInclude \"somedir/@owasp_crs/REQUEST-901-INITIALIZATION.conf\"",
			want:        []string{"/crs/coraza.conf-recommended\n", "/crs/owasp_crs/REQUEST-901-INITIALIZATION.conf\n"},
			wantChanges: []string{"dropped: SecRequestBodyInMemoryLimit 131072"},
		},
		{
			name:        "Coraza's argument-flood variable becomes ModSecurity's own defence",
			text:        "SecRule ARGUMENTS_LIMIT_REACHED \"@eq 1\" \\\n    \"id:7,phase:2,deny,status:400\"",
			want:        []string{"SecArgumentsLimit 1000\n\n", "SecRule &ARGS \"@ge 1000\" \\\n    \"id:7,phase:2,deny,status:400\"\n\n"},
			notWant:     []string{"\nSecRule ARGUMENTS_LIMIT_REACHED"},
			wantChanges: []string{`rewritten: SecRule ARGUMENTS_LIMIT_REACHED "@eq 1" "id:7,phase:2,deny,status:400"`},
		},
		{
			name:        "a limit the rule set sets is kept and used",
			text:        "SecArgumentsLimit 500\nSecRule ARGUMENTS_LIMIT_REACHED \"@eq 1\" \"id:7,phase:1,deny\"",
			want:        []string{"SecArgumentsLimit 500\n\n", "SecRule &ARGS \"@ge 500\" \"id:7,phase:1,deny\""},
			notWant:     []string{"SecArgumentsLimit 1000"},
			wantChanges: []string{`rewritten: SecRule ARGUMENTS_LIMIT_REACHED "@eq 1" "id:7,phase:1,deny"`},
		},
		{
			name:    "unknown embedded name",
			text:    "Include @nothing.conf",
			wantErr: "not an embedded rule file",
		},
		{
			name:    "missing local file",
			text:    "Include /nonexistent/x.conf",
			wantErr: "no such file",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWriter(t.TempDir())
			got, err := w.translate(tc.text, "test", t.TempDir(), 0)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.want {
				if !strings.Contains(got, s) {
					t.Errorf("output lacks %q:\n%s", s, got)
				}
			}
			for _, s := range tc.notWant {
				if strings.Contains(got, s) {
					t.Errorf("output has %q:\n%s", s, got)
				}
			}
			if got := changeList(w.changes); !slices.Equal(got, tc.wantChanges) {
				t.Errorf("changes %q, want %q", got, tc.wantChanges)
			}
		})
	}
}

func changeList(changes []Change) []string {
	var out []string
	for _, c := range changes {
		kind := "dropped: "
		if c.Became != "" {
			kind = "rewritten: "
		}
		out = append(out, kind+c.Directive)
	}
	return out
}

func TestParseFilterConfig(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		wantErr string
	}{
		{"what the sweep writes", `{"directives":["Include /r/full-crs.conf"],"audit_log":"/run/audit.log","audit_engine":"On"}`, ""},
		{"modes", `{"directives":[],"mode":"detect"}`, ""},
		{"Envoy-only field", `{"directives":[],"failure_mode":"open"}`, "unknown field \"failure_mode\""},
		{"bad mode", `{"mode":"loud"}`, "mode \"loud\""},
		{"audit engine alone", `{"audit_engine":"On"}`, "audit_engine without audit_log"},
		{"bad audit engine", `{"audit_log":"/a","audit_engine":"Sometimes"}`, "use RelevantOnly or On"},
		{"audit log path ModSecurity would cut", `{"audit_log":"/my logs/a.log"}`, "ends a path at whitespace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFilterConfig([]byte(tc.json))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// repoTier is a tier file of the repository's rulesets/.
func repoTier(t *testing.T, tier string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "rulesets", tier+".conf"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWriteFullCRSTier(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "modsecurity")
	rs, err := Write(dir, FilterConfig{Directives: []string{"Include " + repoTier(t, "full-crs")}})
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile(rs.MainFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(main), "# Written by wafsweep") || !strings.Contains(string(main), "SecAuditEngine Off") {
		t.Errorf("main file:\n%s", main)
	}
	tier, err := os.ReadFile(filepath.Join(dir, "included", "01-full-crs.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Include " + filepath.Join(dir, "crs", "coraza.conf") + "\n",
		"SecRequestBodyLimit 13107200\n", "SecRequestBodyLimitAction ProcessPartial\n",
		"Include " + filepath.Join(dir, "crs", "crs-setup.conf") + "\n",
		"Include " + filepath.Join(dir, "crs", "owasp_crs", "REQUEST-942-APPLICATION-ATTACK-SQLI.conf") + "\n",
	} {
		if !strings.Contains(string(tier), want) {
			t.Errorf("translated tier lacks %q:\n%s", want, tier)
		}
	}
	coraza, err := os.ReadFile(filepath.Join(dir, "crs", "coraza.conf"))
	if err != nil || !strings.Contains(string(coraza), "Include "+filepath.Join(dir, "crs", "coraza.conf-recommended")+"\n") {
		t.Errorf("the module's @coraza.conf translated to:\n%s (%v)", coraza, err)
	}
	// Every CRS rule file and the data files next to them.
	for _, f := range []string{"REQUEST-949-BLOCKING-EVALUATION.conf", "RESPONSE-980-CORRELATION.conf", "scanners-user-agents.data", "ai-critical-artifacts.data"} {
		if _, err := os.Stat(filepath.Join(dir, "crs", "owasp_crs", f)); err != nil {
			t.Errorf("not extracted: %v", err)
		}
	}
	if n := strings.Count(string(tier), "/owasp_crs/"); n != 27 {
		t.Errorf("%d CRS rule files included, want the 27 of CRS v4.25", n)
	}
	changes := changeList(rs.Changes)
	if len(changes) != 3 || changes[0] != "dropped: SecRequestBodyInMemoryLimit 131072" || !strings.HasPrefix(changes[1], "rewritten: SecRule ARGUMENTS_LIMIT_REACHED") {
		t.Errorf("changes %q, want the recommended configuration's SecRequestBodyInMemoryLimit dropped and the module's two argument-flood rules rewritten", changes)
	}
	for _, want := range []string{
		"# dropped from @coraza.conf-recommended: SecRequestBodyInMemoryLimit 131072",
		"# rewritten in @coraza.conf: SecRule ARGUMENTS_LIMIT_REACHED",
	} {
		if !strings.Contains(string(main), want) {
			t.Errorf("main file does not list %q:\n%s", want, main)
		}
	}
}

func TestWriteAppendsModeAndAuditLog(t *testing.T) {
	dir := t.TempDir()
	rs, err := Write(dir, FilterConfig{Directives: []string{"SecRuleEngine On"}, Mode: "detect", AuditLog: "/run/x/audit.log", AuditEngine: "On"})
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile(rs.MainFile)
	if err != nil {
		t.Fatal(err)
	}
	order := []string{"SecAuditEngine Off", "SecRuleEngine On", "SecRuleEngine DetectionOnly", "SecAuditEngine On", "SecAuditLogFormat JSON", "SecAuditLog /run/x/audit.log"}
	at := 0
	for _, s := range order {
		i := strings.Index(string(main)[at:], s)
		if i < 0 {
			t.Fatalf("%q missing or out of order in:\n%s", s, main)
		}
		at += i
	}
	if _, err := os.Stat(filepath.Join(dir, "crs")); !os.IsNotExist(err) {
		t.Errorf("the CRS was extracted for a rule set that does not include it (%v)", err)
	}
}

func TestWriteRefusesADirectoryModSecurityCannotInclude(t *testing.T) {
	_, err := Write(filepath.Join(t.TempDir(), "user@host"), FilterConfig{})
	if err == nil || !strings.Contains(err.Error(), "'@'") {
		t.Fatalf("err = %v, want the '@' named", err)
	}
}

func TestNestedLocalIncludes(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "outer.conf"), []byte("Include inner.conf\nSecRuleEngine On\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "inner.conf"), []byte("SecRxPreFilter Off\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "loop.conf"), []byte("Include loop.conf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rs, err := Write(dir, FilterConfig{Directives: []string{"Include " + filepath.Join(src, "outer.conf")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Changes) != 1 || rs.Changes[0].Source != filepath.Join(src, "inner.conf") {
		t.Errorf("changes %+v, want SecRxPreFilter dropped from inner.conf", rs.Changes)
	}
	outer, err := os.ReadFile(filepath.Join(dir, "included", "02-outer.conf"))
	if err != nil || !strings.Contains(string(outer), "Include "+filepath.Join(dir, "included", "01-inner.conf")) {
		t.Errorf("outer.conf translated to:\n%s (%v)", outer, err)
	}
	_, err = Write(t.TempDir(), FilterConfig{Directives: []string{"Include " + filepath.Join(src, "loop.conf")}})
	if err == nil || !strings.Contains(err.Error(), "a cycle?") {
		t.Errorf("err = %v, want the include cycle reported", err)
	}
}
