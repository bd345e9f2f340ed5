package ownkeys

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/collection"
	"github.com/corazawaf/coraza/v3/experimental/plugins/plugintypes"
)

// argsPost returns a real, empty ARGS_POST collection of a Coraza
// transaction.
func argsPost(t *testing.T) collection.Map {
	t.Helper()
	w, err := coraza.NewWAF(coraza.NewWAFConfig())
	if err != nil {
		t.Fatal(err)
	}
	tx := w.NewTransaction()
	t.Cleanup(func() { _ = tx.Close() })
	return tx.(plugintypes.TransactionState).Variables().ArgsPost()
}

type pair struct{ key, value string }

func TestSeparateGivesEverySharedKeyACopy(t *testing.T) {
	note, empty := "note", ""
	many := make([]pair, 0, 40)
	for i := range 40 {
		many = append(many, pair{note, fmt.Sprint(i)})
	}
	for _, tc := range []struct {
		name  string
		pairs []pair
	}{
		{"duplicate names", []pair{{"id", "7"}, {note, "a"}, {note, "b"}, {note, "c"}}},
		{"duplicates in two cases", []pair{{note, "a"}, {"Note", "b"}, {note, "c"}}},
		{"empty names", []pair{{"id", "7"}, {empty, "a"}, {empty, "b"}}},
		{"many values (the map path)", append([]pair{{"id", "7"}}, many...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := argsPost(t)
			for _, p := range tc.pairs {
				m.Add(p.key, p.value)
			}
			before := byKey(m)
			separate(m)
			if after := byKey(m); !mapsEqual(before, after) {
				t.Errorf("values changed: before %v, after %v", before, after)
			}
			seen := map[*byte]string{}
			for _, v := range m.FindAll() {
				p := unsafe.StringData(v.Key())
				if p == nil {
					t.Errorf("key %q of %q has no address of its own", v.Key(), v.Value())
				}
				if other, ok := seen[p]; ok {
					t.Errorf("values %q and %q still share a key string", other, v.Value())
				}
				seen[p] = v.Value()
			}
		})
	}
}

func TestSeparateLeavesKeysOfTheirOwnAlone(t *testing.T) {
	m := argsPost(t)
	keys := []string{"a", "b", strings.Clone("note"), strings.Clone("note")}
	for i, k := range keys {
		m.Add(k, fmt.Sprint(i))
	}
	separate(m)
	for _, v := range m.FindAll() {
		if !slices.ContainsFunc(keys, func(k string) bool { return unsafe.StringData(k) == unsafe.StringData(v.Key()) }) {
			t.Errorf("key %q of %q was copied though no other value shared it", v.Key(), v.Value())
		}
	}
}

// byKey lists each key's values in order.
func byKey(m collection.Map) map[string][]string {
	out := map[string][]string{}
	for _, v := range m.FindAll() {
		out[v.Key()] = append(out[v.Key()], v.Value())
	}
	return out
}

func mapsEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestTheRulesCloseTheCacheBypass sends an attack as the last of several
// same-named values of a urlencoded body, which Coraza's parser files under
// one key string, to two rules that share a transformation: the second
// must see the attack every time with the rules of Directives first. The
// case without them shows that the trap is still there (when it fails,
// Coraza keys its cache by value now and the package can go).
func TestTheRulesCloseTheCacheBypass(t *testing.T) {
	rules := `SecRuleEngine On
SecRequestBodyAccess On
SecRule REQUEST_HEADERS:Content-Type "@rx ^application/x-www-form-urlencoded" "id:100,phase:1,pass,nolog,ctl:requestBodyProcessor=URLENCODED"
SecRule ARGS_POST "@streq never" "id:101,phase:2,pass,nolog,t:lowercase"
SecRule ARGS_POST "@contains attack" "id:102,phase:2,deny,status:403,t:lowercase"
`
	body := "a=1&b=2&c=3" + strings.Repeat("&note=fine", 5) + "&note=ATTACK"
	const requests = 300
	for _, tc := range []struct {
		name      string
		directive string
		wantAll   bool
	}{
		{"with the rules", Directives(), true},
		{"without them", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := coraza.NewWAF(coraza.NewWAFConfig().WithDirectives(tc.directive + rules))
			if err != nil {
				t.Fatal(err)
			}
			blocked := 0
			for range requests {
				if interrupted(t, w, body) {
					blocked++
				}
			}
			switch {
			case tc.wantAll && blocked != requests:
				t.Errorf("the attack got past rule 102 in %d of %d requests", requests-blocked, requests)
			case !tc.wantAll && blocked == requests:
				t.Errorf("rule 102 blocked all %d requests without the rules: Coraza no longer confuses shared keys", requests)
			}
			t.Logf("blocked %d of %d", blocked, requests)
		})
	}
}

func interrupted(t *testing.T, w coraza.WAF, body string) bool {
	tx := w.NewTransaction()
	defer func() { _ = tx.Close() }()
	tx.ProcessURI("/submit", "POST", "HTTP/1.1")
	tx.AddRequestHeader("Content-Type", "application/x-www-form-urlencoded")
	tx.ProcessRequestHeaders()
	if _, _, err := tx.WriteRequestBody([]byte(body)); err != nil {
		t.Fatal(err)
	}
	it, err := tx.ProcessRequestBody()
	if err != nil {
		t.Fatal(err)
	}
	return it != nil && it.Action == "deny"
}
