package plugin

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
)

type recorder struct {
	mu      sync.Mutex
	values  []string
	decided []int // the phase of each Decide
	checked int
}

func (r *recorder) Collect(_ plugintypes.TransactionState, c int, v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.values = append(r.values, v)
}
func (r *recorder) Decide(_ plugintypes.TransactionState, phase int) {
	r.decided = append(r.decided, phase)
}
func (r *recorder) Check(plugintypes.TransactionState) { r.checked++ }

func TestOperatorsReachTheirHandlerAndNeverMatch(t *testing.T) {
	rec := &recorder{}
	token, release := Register(rec)
	rules := `SecRuleEngine On
SecRule ARGS "@accelCollect ` + token + `:0" "id:1,phase:2,deny,log,t:none,t:lowercase"
SecRule REQUEST_METHOD "@accelDecide ` + token + `:2" "id:2,phase:2,deny,log"
SecRule REQUEST_METHOD "@accelCheck ` + token + `" "id:3,phase:5,deny,log"`
	w, err := coraza.NewWAF(coraza.NewWAFConfig().WithDirectives(rules))
	release()
	if err != nil {
		t.Fatal(err)
	}
	tx := w.NewTransaction()
	tx.ProcessURI("/?a=ONE&b=Two", "GET", "HTTP/1.1")
	tx.ProcessRequestHeaders()
	if it, _ := tx.ProcessRequestBody(); it != nil {
		t.Errorf("a generated rule interrupted: %+v", it)
	}
	tx.ProcessLogging()
	if n := len(tx.MatchedRules()); n != 0 {
		t.Errorf("%d generated rules matched", n)
	}
	tx.Close()
	got := strings.Join(rec.values, ",")
	if (got != "one,two" && got != "two,one") || !slices.Equal(rec.decided, []int{2}) || rec.checked != 1 {
		t.Errorf("collected %q, decided in phases %v, checked %d", got, rec.decided, rec.checked)
	}
	// After release the token is unknown to new WAFs.
	if _, err := coraza.NewWAF(coraza.NewWAFConfig().WithDirectives(`SecRule ARGS "@accelCollect ` + token + `:0" "id:1"`)); err == nil {
		t.Error("a released token still builds")
	}
}

func TestCollectArgumentIsChecked(t *testing.T) {
	Register(&recorder{})
	_, err := coraza.NewWAF(coraza.NewWAFConfig().WithDirectives(`SecRule ARGS "@accelCollect nocolon" "id:1"`))
	if err == nil || !strings.Contains(err.Error(), "TOKEN:COLLECTOR") {
		t.Errorf("error %v, want a TOKEN:COLLECTOR complaint", err)
	}
}
