package waf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNewEngineRejectsBadDirectiveWithCorazasMessage(t *testing.T) {
	cfg := Config{Directives: []string{"SecRuleEngine On", "SecRuleX ARGS \"@rx x\" \"id:1,deny\""}}
	cfg.applyDefaults()
	_, err := NewEngine(cfg, nil)
	if err == nil {
		t.Fatal("a bad directive must be rejected")
	}
	if !strings.Contains(err.Error(), "coraza rejected the directives") || !strings.Contains(strings.ToLower(err.Error()), "secrulex") {
		t.Fatalf("error does not carry Coraza's message: %v", err)
	}
}

func TestNewEngineMissingInclude(t *testing.T) {
	cfg := Config{Directives: []string{"Include /nonexistent/x.conf"}}
	cfg.applyDefaults()
	if _, err := NewEngine(cfg, nil); err == nil || !strings.Contains(err.Error(), "/nonexistent/x.conf") {
		t.Fatalf("missing include error = %v", err)
	}
}

func TestBodyLimitsFollowDirectives(t *testing.T) {
	tests := []struct {
		name       string
		directives []string
		want       BodyLimits
	}{
		{"explicit", []string{"SecRequestBodyAccess On", "SecRequestBodyLimit 4096", "SecResponseBodyAccess On", "SecResponseBodyLimit 2048"},
			BodyLimits{RequestBodyAccess: true, RequestBodyLimit: 4096, ResponseBodyAccess: true, ResponseBodyLimit: 2048}},
		{"last one wins", []string{"SecRequestBodyLimit 4096", "SecRequestBodyLimit 8192"},
			BodyLimits{RequestBodyLimit: 8192, ResponseBodyLimit: 524288}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Directives: tt.directives}
			cfg.applyDefaults()
			e := mustEngine(t, cfg)
			if got := e.Limits(); got != tt.want {
				t.Fatalf("limits = %+v, want %+v", got, tt.want)
			}
		})
	}
	full := mustEngine(t, tierConfig(t, "full-crs"))
	if l := full.Limits(); !l.RequestBodyAccess || l.RequestBodyLimit != 13107200 || l.ResponseBodyAccess {
		t.Fatalf("full-crs limits = %+v", l)
	}
}

func TestDirectiveTextOrder(t *testing.T) {
	spec := engineSpec{directives: []string{"SecRuleEngine On"}, mode: ModeDetect, auditLog: "/tmp/a b.log", auditMode: "On"}
	text := spec.directiveText()
	order := []string{"SecAuditEngine Off", "SecRuleEngine On", "SecRuleEngine DetectionOnly", "SecAuditEngine On", `SecAuditLog "/tmp/a b.log"`}
	last := -1
	for _, want := range order {
		i := strings.Index(text, want)
		if i <= last {
			t.Fatalf("%q missing or out of order in:\n%s", want, text)
		}
		last = i
	}
}

func TestEveryRulesetLoads(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(filepath.Dir(rulesetPath(t, "x")), "*.conf"))
	if err != nil || len(files) < 8 {
		t.Fatalf("rulesets: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			mustEngine(t, tierConfig(t, strings.TrimSuffix(filepath.Base(f), ".conf")))
		})
	}
}

func TestAuditLogWritesJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	cfg := tierConfig(t, "headers-only")
	cfg.AuditLog, cfg.AuditEngine = path, "RelevantOnly"
	e := mustEngine(t, cfg)
	s := NewStream(&cfg, e, nil)
	if d := s.OnRequestHeaders(get("/admin")); d.Action != Reply {
		t.Fatalf("decision = %+v", d)
	}
	s.Complete()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(strings.TrimSpace(string(b)), "{") || !strings.Contains(string(b), `"101"`) && !strings.Contains(string(b), "101") {
		t.Fatalf("audit log is not a JSON record of rule 101: %q", b)
	}
}
