package re2rx

import (
	"testing"

	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
)

// The RE2 @rx must match, capture and keep byte patterns as Coraza does.
func TestRE2RxMatchesAndCaptures(t *testing.T) {
	Install()
	w, err := coraza.NewWAF(coraza.NewWAFConfig().WithDirectives(`SecRuleEngine On
SecRule ARGS:q "@rx (?i)(union)\s+select" "id:1,phase:2,capture,deny,status:403,log,logdata:'%{TX.1}'"
SecRule ARGS:b "@rx \xff\xfe" "id:2,phase:2,deny,status:403,log"`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		query string
		rule  int
		data  string
	}{
		{"q=1+UNION+select", 1, "UNION"},
		{"b=%ff%fe", 2, ""},
		{"q=hello", 0, ""},
	} {
		tx := w.NewTransaction()
		tx.ProcessURI("/?"+tt.query, "GET", "HTTP/1.1")
		tx.ProcessRequestHeaders()
		it, _ := tx.ProcessRequestBody()
		got := 0
		if it != nil {
			got = it.RuleID
		}
		if got != tt.rule {
			t.Errorf("%s: rule %d, want %d", tt.query, got, tt.rule)
		}
		if tt.data != "" {
			tx1 := tx.(plugintypes.TransactionState).Variables().TX().Get("1")
			if len(tx1) != 1 || tx1[0] != tt.data {
				t.Errorf("%s: TX:1 = %q, want %q", tt.query, tx1, tt.data)
			}
		}
		tx.Close()
	}
}
