package waf

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestHasResponseRules(t *testing.T) {
	const phase1 = `SecRule REQUEST_URI "@contains /admin" "id:1,phase:1,deny"`
	tests := []struct {
		name       string
		directives []string
		want       bool
	}{
		{"request phases only", []string{phase1, `SecAction "id:2,phase:2,pass,nolog"`}, false},
		{"a SecAction's default phase is 2", []string{`SecAction "id:2,pass,nolog"`}, false},
		{"markers read nothing", []string{phase1, "SecMarker END"}, false},
		{"response headers", []string{phase1, `SecRule RESPONSE_HEADERS:X-Leak "@streq yes" "id:3,phase:3,deny"`}, true},
		// Without SecResponseBodyAccess On a RESPONSE_BODY rule can never
		// match, and the accelerated build leaves it out: then nothing
		// reads the response.
		{"response body", []string{"SecResponseBodyAccess On", `SecRule RESPONSE_BODY "@contains token" "id:4,phase:4,deny"`}, true},
		{"logging phase", []string{`SecRule RESPONSE_STATUS "@streq 500" "id:5,phase:5,pass,log"`}, true},
		{"a chain is its parent's phase", []string{
			`SecRule RESPONSE_STATUS "@streq 500" "id:6,phase:3,chain,deny"`,
			`SecRule REQUEST_URI "@contains /x" ""`}, true},
		{"removed by id", []string{phase1, `SecRule RESPONSE_BODY "@contains token" "id:4,phase:4,deny"`,
			"SecRuleRemoveById 4"}, false},
		{"moved to a response phase by an update", []string{phase1, `SecRuleUpdateActionById 1 "phase:3"`}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Directives: append([]string{"SecRuleEngine On"}, tt.directives...)}
			cfg.applyDefaults()
			e := mustEngine(t, cfg)
			if e.responseRules != tt.want {
				t.Fatalf("responseRules = %v, want %v", e.responseRules, tt.want)
			}
		})
	}
	for tier, want := range map[string]bool{"headers-only": false, "targeted": false, "full-crs": true} {
		if got := mustEngine(t, tierConfig(t, tier)).responseRules; got != want {
			t.Errorf("tier %s: responseRules = %v, want %v", tier, got, want)
		}
	}
}

// The response phases run when something reads what they add: a rule of
// phases 3 to 5, or the audit log. Where they run, a text/plain body is held
// for phase 4; where they do not, it streams.
func TestResponsePhasesRunOnlyWhenRead(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.log")
	base := []string{"SecRuleEngine On", "SecResponseBodyAccess On", "SecResponseBodyMimeType text/plain",
		`SecRule REQUEST_URI "@contains /admin" "id:1,phase:1,deny"`}
	tests := []struct {
		name  string
		extra []string
		path  string
		want  Action
	}{
		{"no rule reads the response", nil, "/", Continue},
		{"a phase 4 rule", []string{`SecRule RESPONSE_BODY "@contains token" "id:4,phase:4,deny"`}, "/", Hold},
		{"a phase 5 rule", []string{`SecRule RESPONSE_STATUS "@streq 500" "id:5,phase:5,pass,log"`}, "/", Hold},
		{"the audit log", []string{"SecAuditEngine On", "SecAuditLog " + strconv.Quote(audit)}, "/", Hold},
		{"a rule turns the audit log on for this request", []string{"SecAuditLog " + strconv.Quote(audit),
			`SecRule REQUEST_URI "@beginsWith /audited" "id:2,phase:1,pass,nolog,ctl:auditEngine=On"`}, "/audited", Hold},
		{"the same rule, another request", []string{"SecAuditLog " + strconv.Quote(audit),
			`SecRule REQUEST_URI "@beginsWith /audited" "id:2,phase:1,pass,nolog,ctl:auditEngine=On"`}, "/", Continue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Directives: append(append([]string{}, base...), tt.extra...)}
			cfg.applyDefaults()
			s := NewStream(&cfg, mustEngine(t, cfg), nil)
			defer s.Complete()
			if d := s.OnRequestHeaders(get(tt.path)); d.Action != Continue {
				t.Fatalf("request: %+v", d)
			}
			if got := s.InspectsResponse(); got != (tt.want == Hold) {
				t.Errorf("InspectsResponse = %v", got)
			}
			if d := s.OnResponseHeaders(200, []Header{{"content-type", "text/plain"}}, false); d.Action != tt.want {
				t.Fatalf("response headers: %+v, want action %d", d, tt.want)
			}
		})
	}
}

// Leaving the response phases out changes no verdict and no record: a
// phase 5 rule still sees the status, and an audit record still has the
// response's headers.
func TestResponseSeenWhereRead(t *testing.T) {
	t.Run("phase 5 rule", func(t *testing.T) {
		cfg := Config{Directives: []string{"SecRuleEngine On",
			`SecRule RESPONSE_STATUS "@streq 503" "id:5,phase:5,pass,log,msg:'upstream unavailable'"`}}
		cfg.applyDefaults()
		log := &recordingLogger{}
		e, err := NewEngine(cfg, log)
		if err != nil {
			t.Fatal(err)
		}
		s := NewStream(&cfg, e, nil)
		s.OnRequestHeaders(get("/"))
		s.OnResponseHeaders(503, []Header{{"content-type", "text/plain"}}, true)
		s.Complete()
		if !log.contains(`[id "5"]`) {
			t.Fatalf("rule 5 did not match a 503; log: %q", log.lines)
		}
	})
	t.Run("audit record", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "audit.log")
		cfg := tierConfig(t, "headers-only")
		cfg.AuditLog, cfg.AuditEngine = path, "On"
		s := NewStream(&cfg, mustEngine(t, cfg), nil)
		s.OnRequestHeaders(get("/"))
		s.OnResponseHeaders(200, []Header{{"content-type", "text/plain"}, {"x-backend-mark", "seen-by-phase-3"}}, true)
		s.Complete()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "seen-by-phase-3") {
			t.Fatalf("the audit record lacks the response headers: %s", b)
		}
	})
}
