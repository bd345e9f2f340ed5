package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
)

func TestTiersThroughEnvoy(t *testing.T) {
	sqliJSON := `{"order":{"id":7,"note":"1' union select password from users--"}}`
	benignJSON := `{"order":{"id":7,"items":[{"sku":"A-1","qty":2},{"sku":"B-9","qty":1}],"note":"leave at the door"}}`
	xssForm := `comment=%3Cscript%3Ealert(1)%3C%2Fscript%3E`
	benignForm := `comment=great+product&stars=5`
	tests := []struct {
		tier       string
		req        request
		wantStatus int
		wantRule   string // a rule id that must appear in Envoy's log
	}{
		{"headers-only", request{path: "/products?page=2"}, 200, ""},
		{"headers-only", request{path: "/admin/users"}, 403, "101"},
		{"headers-only", request{path: "/", headers: map[string]string{"User-Agent": "Nikto/2.5"}}, 403, "9131"},
		{"targeted", request{path: "/api/orders", body: sqliJSON, contentType: "application/json"}, 403, "9421"},
		{"targeted", request{path: "/api/orders", body: benignJSON, contentType: "application/json"}, 200, ""},
		{"targeted", request{path: "/comments", body: xssForm, contentType: "application/x-www-form-urlencoded"}, 403, "9411"},
		{"targeted", request{path: "/comments", body: benignForm, contentType: "application/x-www-form-urlencoded"}, 200, ""},
		{"full-crs", request{path: "/search?q=1%27%20or%201%3D1--"}, 403, "942100"},
		{"full-crs", request{path: "/api/orders", body: sqliJSON, contentType: "application/json"}, 403, "949110"},
		{"full-crs", request{path: "/api/orders", body: benignJSON, contentType: "application/json"}, 200, ""},
		{"full-crs", request{path: "/api/orders", body: benignJSON, contentType: "application/json", http2: true}, 200, ""},
		{"full-crs", request{path: "/search?q=1%27%20or%201%3D1--", http2: true}, 403, "942100"},
		{"full-crs", request{path: "/comments", body: benignForm, contentType: "application/x-www-form-urlencoded"}, 200, ""},
	}
	// One Envoy per tier, started on the parent test so it outlives the subtests.
	proxies := map[string]*proxy{}
	for _, tt := range tests {
		if proxies[tt.tier] == nil {
			proxies[tt.tier] = startProxy(t, proxyOptions{config: `{"directives":[` + tierDirectives(t, tt.tier) + `]}`})
		}
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s %s %s h2=%v", tt.tier, tt.req.path, tt.req.contentType, tt.req.http2)
		t.Run(name, func(t *testing.T) {
			p := proxies[tt.tier]
			before := p.backend.Stats().Requests
			resp := p.do(t, tt.req)
			if resp.status != tt.wantStatus {
				t.Fatalf("status %d, want %d\n%s", resp.status, tt.wantStatus, p.logTail())
			}
			reached := p.backend.Stats().Requests - before
			if tt.wantStatus == 403 && reached != 0 {
				t.Fatal("a blocked request reached the backend")
			}
			if tt.wantStatus == 200 {
				if reached != 1 {
					t.Fatalf("backend saw %d requests, want 1", reached)
				}
				if got := resp.headers.Get(backend.HeaderBodyBytes); got != strconv.Itoa(len(tt.req.body)) {
					t.Fatalf("backend got %s body bytes, want %d", got, len(tt.req.body))
				}
			}
			if tt.wantRule != "" {
				eventually(t, "rule "+tt.wantRule+" in Envoy's log", func() bool { return p.loggedRuleIDs(t)[tt.wantRule] })
			}
		})
	}
}

func TestBodyLimits(t *testing.T) {
	tests := []struct {
		name       string
		directives string
		bodySize   int
		wantStatus int
		wantBytes  int // body bytes the backend must receive
	}{
		{"reject over the limit answers 413", `"SecRuleEngine On","SecRequestBodyAccess On","SecRequestBodyLimit 1000","SecRequestBodyLimitAction Reject"`, 5000, 413, -1},
		{"process partial forwards the whole body", `"SecRuleEngine On","SecRequestBodyAccess On","SecRequestBodyLimit 1000","SecRequestBodyLimitAction ProcessPartial"`, 5000, 200, 5000},
		// 3 MiB is over Envoy's default 1 MiB buffer: the filter must raise
		// the stream's buffer limit to the WAF's, or Envoy answers 413 first.
		{"a body within the WAF limit but over Envoy's default buffer", tierDirectives(t, "targeted"), 3 << 20, 200, 3 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startProxy(t, proxyOptions{config: `{"directives":[` + tt.directives + `]}`})
			body := strings.Repeat("a", tt.bodySize)
			resp := p.do(t, request{path: "/upload", body: body, contentType: "application/octet-stream"})
			if resp.status != tt.wantStatus {
				t.Fatalf("status %d, want %d\n%s", resp.status, tt.wantStatus, p.logTail())
			}
			if tt.wantBytes >= 0 && resp.headers.Get(backend.HeaderBodyBytes) != strconv.Itoa(tt.wantBytes) {
				t.Fatalf("backend received %s bytes, want %d", resp.headers.Get(backend.HeaderBodyBytes), tt.wantBytes)
			}
			if tt.wantBytes < 0 && p.backend.Stats().Requests != 0 {
				t.Fatal("a rejected body reached the backend")
			}
		})
	}
}

func TestPerRouteConfig(t *testing.T) {
	off, detect := `{"mode":"off"}`, `{"mode":"detect"}`
	strict := `{"directives":["SecRuleEngine On","SecRule REQUEST_URI \"@contains /strict/forbidden\" \"id:7001,phase:1,deny,status:451,log\""]}`
	p := startProxy(t, proxyOptions{
		config: `{"directives":[` + tierDirectives(t, "headers-only") + `]}`,
		routes: []envoyconfig.Route{
			{Prefix: "/off", PerRouteWAF: &off},
			{Prefix: "/detect", PerRouteWAF: &detect},
			{Prefix: "/strict", PerRouteWAF: &strict},
			{Prefix: "/"},
		},
	})
	tests := []struct {
		path       string
		wantStatus int
	}{
		{"/admin", 403},              // listener rules block
		{"/off/admin", 200},          // WAF off on the route
		{"/detect/admin", 200},       // listener rules, detect-only
		{"/strict/admin", 200},       // the route's own rules replace the listener's
		{"/strict/forbidden/x", 451}, // ...and block with their own status
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if resp := p.do(t, request{path: tt.path}); resp.status != tt.wantStatus {
				t.Fatalf("status %d, want %d\n%s", resp.status, tt.wantStatus, p.logTail())
			}
		})
	}
	stats := p.stats(t)
	if stats["corazawaf.bypassed"] < 1 {
		t.Errorf("bypassed streams not counted: %v", stats)
	}
	if stats["corazawaf.detected.phase.request_headers.rule_id.101"] < 1 && stats["corazawaf.detected.phase.request_body.rule_id.101"] < 1 {
		t.Errorf("detect-only route's would-be block not counted: %v", filterStats(stats))
	}
}

func TestDetectOnlyMode(t *testing.T) {
	p := startProxy(t, proxyOptions{config: `{"mode":"detect","directives":[` + tierDirectives(t, "full-crs") + `]}`})
	resp := p.do(t, request{path: "/search?q=1%27%20or%201%3D1--"})
	if resp.status != 200 {
		t.Fatalf("detect mode blocked: %d", resp.status)
	}
	eventually(t, "the matched rule logged", func() bool { return p.loggedRuleIDs(t)["942100"] })
}

func TestResponseInspection(t *testing.T) {
	cfg := `{"directives":["SecRuleEngine On",` + responseDirectives + "]}"
	p := startProxy(t, proxyOptions{config: cfg})
	if resp := p.do(t, request{path: "/page?reply_ct=text/plain&reply_body=hello"}); resp.status != 200 || resp.body != "hello" {
		t.Fatalf("clean response: %d %q", resp.status, resp.body)
	}
	resp := p.do(t, request{path: "/page?reply_ct=text/plain&reply_body=the+secret-token+leaked"})
	if resp.status != 502 || strings.Contains(resp.body, "secret-token") {
		t.Fatalf("leaking response not replaced: %d %q\n%s", resp.status, resp.body, p.logTail())
	}
	if resp := p.do(t, request{path: "/img?reply_ct=image/png&reply_body=secret-token"}); resp.status != 200 {
		t.Fatalf("unlisted MIME type was inspected: %d", resp.status)
	}
}

func TestBadConfigIsRejectedWithCorazasMessage(t *testing.T) {
	tests := []struct {
		name, config, wantLog string
	}{
		{"unknown directive", `{"directives":["SecRuleEngine On","SecRuleBogus ARGS x"]}`, `unknown directive \"secrulebogus\"`},
		{"bad operator", `{"directives":["SecRule ARGS \"@nosuchop x\" \"id:1,deny\""]}`, "nosuchop"},
		{"unknown field", `{"directivs":[]}`, `unknown field \"directivs\"`},
		{"missing include", `{"directives":["Include /nonexistent/rules.conf"]}`, "/nonexistent/rules.conf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tryStartProxy(t, proxyOptions{config: tt.config})
			if err == nil {
				t.Fatal("Envoy accepted a bad filter config")
			}
			log, readErr := os.ReadFile(p.logPath)
			if readErr != nil {
				t.Fatal(readErr)
			}
			want := strings.ReplaceAll(tt.wantLog, `\"`, `"`)
			if !strings.Contains(string(log), "[corazawaf] filter config") || !strings.Contains(string(log), want) {
				t.Fatalf("Envoy's log does not carry the reason %q:\n%s", want, log)
			}
			if strings.Contains(string(log), "Caught Segmentation fault") || strings.Contains(string(log), "SIGSEGV") {
				t.Fatalf("Envoy crashed instead of rejecting:\n%s", log)
			}
		})
	}
}

func TestMetricsAndMetadata(t *testing.T) {
	p := startProxy(t, proxyOptions{config: `{"directives":[` + tierDirectives(t, "headers-only") + `]}`})
	p.do(t, request{path: "/ok"})
	p.do(t, request{path: "/admin"})
	eventually(t, "counters", func() bool {
		s := p.stats(t)
		return s["corazawaf.transactions"] >= 2 && s["corazawaf.blocked.phase.request_headers.rule_id.101"] == 1 &&
			s["corazawaf.go_goroutines"] > 0
	})
	prom := p.prometheus(t)
	for _, want := range []string{"corazawaf_transactions", `corazawaf_blocked{phase="request_headers",rule_id="101"} 1`, "corazawaf_inspection_time_us"} {
		if !strings.Contains(prom, want) {
			t.Errorf("/stats/prometheus lacks %q", want)
		}
	}
	eventually(t, "the access log entry with the verdict", func() bool {
		b, _ := os.ReadFile(p.accLog)
		return strings.Contains(string(b), `"rule_id":101`)
	})
}

func (p *proxy) stats(t testing.TB) map[string]uint64 {
	t.Helper()
	s, err := p.envoy.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (p *proxy) prometheus(t testing.TB) string {
	t.Helper()
	s, err := p.envoy.PrometheusStats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func filterStats(all map[string]uint64) string {
	out := map[string]uint64{}
	for k, v := range all {
		if strings.HasPrefix(k, "corazawaf.") {
			out[k] = v
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}
