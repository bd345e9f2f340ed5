package plugin

import (
	"fmt"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
)

var phraseFS = fstest.MapFS{
	"rules/words.data": {Data: []byte("# a comment\n  /etc/passwd\n\npasswd\nETC/SHADOW\n")},
	"rules/empty.data": {Data: []byte("# nothing\n\n")},
}

func TestPMFromFileIsCompactOnlyOnAMarkedRoot(t *testing.T) {
	tests := []struct {
		root fs.FS
		want string
	}{
		{phraseFS, "plugin.libraryPM"},
		{CompactPhrases(phraseFS), "plugin.compactPM"},
	}
	for _, tt := range tests {
		op, err := newPMFromFile(plugintypes.OperatorOptions{Arguments: "words.data", Path: []string{"rules"}, Root: tt.root})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%T", op); got != tt.want {
			t.Errorf("root %T: operator %s, want %s", tt.root, got, tt.want)
		}
	}
}

func TestPMFromFileReadsAsCorazaDoes(t *testing.T) {
	for _, root := range []fs.FS{phraseFS, CompactPhrases(phraseFS)} {
		if _, err := newPMFromFile(plugintypes.OperatorOptions{Arguments: "missing.data", Path: []string{"rules"}, Root: root}); err == nil {
			t.Errorf("root %T: a missing data file builds", root)
		}
		if _, err := newPMFromFile(plugintypes.OperatorOptions{Arguments: "words.data", Root: root}); err == nil {
			t.Errorf("root %T: a relative name without directories builds", root)
		}
		if _, err := newPMFromFile(plugintypes.OperatorOptions{Arguments: "words.data", Path: []string{"elsewhere", "rules"}, Root: root}); err != nil {
			t.Errorf("root %T: the second directory is not searched: %v", root, err)
		}
	}
}

// TestPMFromFileVerdictsAndCapturesMatchOnBothRoots runs the same rules
// in a WAF on a plain root and on a marked one: same matches, same TX.0-9.
func TestPMFromFileVerdictsAndCapturesMatchOnBothRoots(t *testing.T) {
	registerOnce.Do(registerOperators)
	rules := `SecRuleEngine On
SecRule ARGS "@pmFromFile words.data" "id:1,phase:1,pass,log,capture,setvar:'tx.found=%{TX.0}|%{TX.1}|%{TX.2}'"
SecRule ARGS "@pmf empty.data" "id:2,phase:1,deny,log"
SecRule TX:FOUND "@unconditionalMatch" "id:3,phase:1,pass,log,msg:'%{TX.FOUND}'"`
	values := []string{"benign", "cat /ETC/PASSWD and /etc/shadow", "passwd"}
	run := func(root fs.FS, value string) string {
		w, err := coraza.NewWAF(coraza.NewWAFConfig().WithRootFS(root).WithDirectives(
			"Include rules/main.conf"))
		if err != nil {
			t.Fatal(err)
		}
		tx := w.NewTransaction()
		defer tx.Close()
		tx.ProcessURI("/?q="+value, "GET", "HTTP/1.1")
		if it := tx.ProcessRequestHeaders(); it != nil {
			return fmt.Sprintf("interrupted by %d", it.RuleID)
		}
		var out string
		for _, mr := range tx.MatchedRules() {
			out += fmt.Sprintf("[%d %s]", mr.Rule().ID(), mr.Message())
		}
		return out
	}
	withRules := fstest.MapFS{"rules/main.conf": {Data: []byte(rules)}}
	for name, f := range phraseFS {
		withRules[name] = f
	}
	for _, value := range values {
		plain, compact := run(withRules, value), run(CompactPhrases(withRules), value)
		if plain != compact {
			t.Errorf("%q: plain root %s, compact %s", value, plain, compact)
		}
		t.Logf("%q: %s", value, plain)
		if value != "benign" && plain == "" {
			t.Errorf("%q matched nothing", value)
		}
	}
}
