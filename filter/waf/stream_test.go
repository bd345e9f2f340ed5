package waf

import (
	"bytes"
	"strings"
	"testing"
)

// run drives a request through a stream the way the ABI binding does,
// frame by frame, and returns the first decisive decision and the outcome.
func run(t *testing.T, cfg Config, e *Engine, req RequestHead, body []byte, frame int) (Decision, string, Outcome) {
	t.Helper()
	s := NewStream(&cfg, e, &recordingLogger{})
	d := s.OnRequestHeaders(req)
	step := "request_headers"
	for len(body) > 0 && d.Action == Hold {
		n := min(frame, len(body))
		d = s.OnRequestBody([][]byte{body[:n]}, n == len(body))
		body = body[n:]
		step = "request_body"
	}
	return d, step, s.Complete()
}

func TestRequestVerdicts(t *testing.T) {
	headersOnly := tierConfig(t, "headers-only")
	targeted := tierConfig(t, "targeted")
	fullCRS := tierConfig(t, "full-crs")
	engines := map[string]*Engine{}
	for name, cfg := range map[string]Config{"headers-only": headersOnly, "targeted": targeted, "full-crs": fullCRS} {
		engines[name] = mustEngine(t, cfg)
	}
	cfgs := map[string]Config{"headers-only": headersOnly, "targeted": targeted, "full-crs": fullCRS}

	scanner := get("/")
	scanner.Headers = []Header{{"user-agent", "sqlmap/1.7"}}
	sqliJSON := []byte(`{"order":{"id":7,"note":"1' union select password from users--"}}`)
	xssForm := []byte(`comment=%3Cscript%3Ealert(1)%3C%2Fscript%3E`)
	benignJSON := []byte(`{"order":{"id":7,"items":[{"sku":"A-1","qty":2}],"note":"leave at the door"}}`)
	payloadJSON := []byte(`{"payload":"maliciouspayload"}`)

	tests := []struct {
		name       string
		tier       string
		req        RequestHead
		body       []byte
		wantAction Action
		wantStatus int
		wantRule   int
		wantStep   string
	}{
		{"benign GET passes", "full-crs", get("/products?page=2"), nil, Continue, 0, 0, "request_headers"},
		{"admin path blocked in phase 1", "headers-only", get("/Admin/users"), nil, Reply, 403, 101, "request_headers"},
		{"scanner user agent blocked", "headers-only", scanner, nil, Reply, 403, 9131, "request_headers"},
		{"headers-only does not read bodies", "headers-only", post("/api", "application/json", len(sqliJSON)), sqliJSON, Continue, 0, 0, "request_headers"},
		{"SQLi in a JSON body, targeted", "targeted", post("/api", "application/json", len(sqliJSON)), sqliJSON, Reply, 403, 9421, "request_body"},
		{"exact payload in a JSON field", "targeted", post("/api", "application/json", len(payloadJSON)), payloadJSON, Reply, 403, 102, "request_body"},
		{"XSS in a form body, targeted", "targeted", post("/c", "application/x-www-form-urlencoded", len(xssForm)), xssForm, Reply, 403, 9411, "request_body"},
		{"benign JSON, targeted", "targeted", post("/api", "application/json", len(benignJSON)), benignJSON, Continue, 0, 0, "request_body"},
		{"SQLi in a JSON body, full CRS, small frames", "full-crs", post("/api", "application/json", len(sqliJSON)), sqliJSON, Reply, 403, 949110, "request_body"},
		{"SQLi in the query, full CRS", "full-crs", get("/search?q=1%27%20or%201%3D1--"), nil, Reply, 403, 949110, "request_headers"},
		{"benign JSON, full CRS", "full-crs", post("/api", "application/json", len(benignJSON)), benignJSON, Continue, 0, 0, "request_body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, step, out := run(t, cfgs[tt.tier], engines[tt.tier], tt.req, tt.body, 7)
			if d.Action != tt.wantAction || step != tt.wantStep {
				t.Fatalf("action %v at %s, want %v at %s (decision %+v)", d.Action, step, tt.wantAction, tt.wantStep, d)
			}
			if tt.wantAction == Reply {
				if d.Reply.Status != tt.wantStatus || d.Reply.Verdict == nil || d.Reply.Verdict.RuleID != tt.wantRule {
					t.Fatalf("reply %+v verdict %+v, want status %d rule %d", d.Reply, d.Reply.Verdict, tt.wantStatus, tt.wantRule)
				}
				if out.Blocked == nil || out.Blocked.RuleID != tt.wantRule {
					t.Fatalf("outcome %+v", out)
				}
			} else if out.Blocked != nil {
				t.Fatalf("benign request blocked: %+v", out.Blocked)
			}
			if !out.Inspected {
				t.Fatal("outcome not marked inspected")
			}
		})
	}
}

func TestBodyHeldUntilPhaseTwo(t *testing.T) {
	cfg := tierConfig(t, "targeted")
	s := NewStream(&cfg, mustEngine(t, cfg), nil)
	d := s.OnRequestHeaders(post("/api", "application/json", 100))
	if d.Action != Hold || d.BufferLimit != 13107200+bodyHeadroom {
		t.Fatalf("headers decision = %+v, want Hold with the inspection limit as buffer limit", d)
	}
	if d := s.OnRequestBody([][]byte{[]byte(`{"a":`)}, false); d.Action != Hold {
		t.Fatalf("mid-body decision = %+v, want Hold", d)
	}
	if d := s.OnRequestBody([][]byte{[]byte(`"b"}`)}, true); d.Action != Continue {
		t.Fatalf("end decision = %+v, want Continue", d)
	}
	s.Complete()
}

func TestBodyLimitActions(t *testing.T) {
	body := bytes.Repeat([]byte("a"), 300)
	tests := []struct {
		name       string
		action     string
		wantAction Action
		wantStatus int
	}{
		{"reject answers 413", "Reject", Reply, 413},
		{"process partial forwards the body", "ProcessPartial", Continue, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Directives: []string{"SecRuleEngine On", "SecRequestBodyAccess On",
				"SecRequestBodyLimit 100", "SecRequestBodyLimitAction " + tt.action}}
			cfg.applyDefaults()
			e := mustEngine(t, cfg)
			s := NewStream(&cfg, e, nil)
			if d := s.OnRequestHeaders(post("/upload", "application/octet-stream", len(body))); d.Action != Hold {
				t.Fatalf("headers: %+v", d)
			}
			var d Decision
			frames := 0
			for off := 0; off < len(body); off += 50 {
				frames++
				d = s.OnRequestBody([][]byte{body[off : off+50]}, off+50 == len(body))
				if d.Action != Hold {
					break
				}
			}
			if d.Action != tt.wantAction {
				t.Fatalf("decision %+v after %d frames, want %v", d, frames, tt.wantAction)
			}
			if tt.wantAction == Reply && d.Reply.Status != tt.wantStatus {
				t.Fatalf("status %d, want %d", d.Reply.Status, tt.wantStatus)
			}
			if tt.wantAction == Continue && frames != 2 {
				t.Fatalf("ProcessPartial should release the body once the limit is reached (frame 2), released at frame %d", frames)
			}
			// Frames after the release pass untouched.
			if tt.wantAction == Continue {
				if d := s.OnRequestBody([][]byte{body[:50]}, true); d.Action != Continue {
					t.Fatalf("frame after release: %+v", d)
				}
			}
			s.Complete()
		})
	}
}

func TestDetectModeNeverBlocks(t *testing.T) {
	cfg := tierConfig(t, "headers-only")
	cfg.Mode = ModeDetect
	d, _, out := run(t, cfg, mustEngine(t, cfg), get("/admin"), nil, 0)
	if d.Action != Continue || out.Blocked != nil {
		t.Fatalf("detect mode blocked: %+v %+v", d, out)
	}
	if out.Detected == nil || out.Detected.RuleID != 101 {
		t.Fatalf("detect mode did not record the would-be block: %+v", out.Detected)
	}
}

func TestResponseInspection(t *testing.T) {
	cfg := Config{Directives: []string{"SecRuleEngine On", "SecResponseBodyAccess On", "SecResponseBodyMimeType text/plain",
		`SecRule RESPONSE_BODY "@contains secret-token" "id:5001,phase:4,deny,status:502,log"`,
		`SecRule RESPONSE_HEADERS:X-Leak "@streq yes" "id:5002,phase:3,deny,log"`}}
	cfg.applyDefaults()
	e := mustEngine(t, cfg)
	tests := []struct {
		name       string
		headers    []Header
		body       string
		wantStatus int
		wantRule   int
	}{
		{"leak in a text body", []Header{{"content-type", "text/plain"}}, "here is the secret-token", 502, 5001},
		{"leak in a header", []Header{{"content-type", "text/plain"}, {"x-leak", "yes"}}, "fine", 403, 5002},
		{"clean body", []Header{{"content-type", "text/plain"}}, "fine", 0, 0},
		{"unlisted MIME type is not inspected", []Header{{"content-type", "image/png"}}, "secret-token", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStream(&cfg, e, nil)
			s.OnRequestHeaders(get("/"))
			d := s.OnResponseHeaders(200, tt.headers, false)
			if d.Action == Hold {
				d = s.OnResponseBody([][]byte{[]byte(tt.body)}, true)
			}
			s.Complete()
			if tt.wantRule == 0 {
				if d.Action != Continue {
					t.Fatalf("clean response stopped: %+v", d)
				}
				return
			}
			if d.Action != Reply || d.Reply.Status != tt.wantStatus || d.Reply.Verdict.RuleID != tt.wantRule {
				t.Fatalf("decision %+v, want status %d by rule %d", d, tt.wantStatus, tt.wantRule)
			}
		})
	}

	off := cfg
	off.InspectResponse = ptr(false)
	s := NewStream(&off, e, nil)
	s.OnRequestHeaders(get("/"))
	if d := s.OnResponseHeaders(200, []Header{{"x-leak", "yes"}}, true); d.Action != Continue {
		t.Fatalf("inspect_response false still inspected: %+v", d)
	}
}

func TestOwnReplyIsNotInspected(t *testing.T) {
	cfg := tierConfig(t, "headers-only")
	s := NewStream(&cfg, mustEngine(t, cfg), nil)
	if d := s.OnRequestHeaders(get("/admin")); d.Action != Reply {
		t.Fatal("expected a block")
	}
	if d := s.OnResponseHeaders(403, nil, true); d.Action != Continue {
		t.Fatalf("our own 403 was inspected: %+v", d)
	}
}

func TestDenyResponseShape(t *testing.T) {
	cfg := Config{Directives: []string{"SecRuleEngine On",
		`SecRule REQUEST_URI "@contains /x" "id:7001,phase:1,deny,status:418,log"`,
		`SecRule REQUEST_URI "@contains /r" "id:7002,phase:1,redirect:https://example.test/blocked,log"`,
		`SecRule REQUEST_URI "@contains /d" "id:7003,phase:1,drop,log"`}}
	cfg.applyDefaults()
	cfg.DenyResponse = DenyResponse{Body: "blocked\n", Headers: map[string]string{"content-type": "text/plain"}}
	e := mustEngine(t, cfg)
	tests := []struct {
		path       string
		wantStatus int
		wantHeader Header
	}{
		{"/x", 418, Header{"content-type", "text/plain"}},
		{"/r", 302, Header{"location", "https://example.test/blocked"}},
		{"/d", 403, Header{"connection", "close"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			d, _, _ := run(t, cfg, e, get(tt.path), nil, 0)
			if d.Action != Reply || d.Reply.Status != tt.wantStatus || d.Reply.Body != "blocked\n" {
				t.Fatalf("reply %+v", d.Reply)
			}
			found := false
			for _, h := range d.Reply.Headers {
				found = found || h == tt.wantHeader
			}
			if !found || !strings.HasPrefix(d.Reply.Details, "corazawaf_denied_rule_") {
				t.Fatalf("reply headers %v details %q, want %v", d.Reply.Headers, d.Reply.Details, tt.wantHeader)
			}
		})
	}
}

func TestMatchedRulesAreLoggedModSecurityStyle(t *testing.T) {
	cfg := tierConfig(t, "full-crs")
	log := &recordingLogger{}
	e, err := NewEngine(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStream(&cfg, e, log)
	s.OnRequestHeaders(get("/search?q=1%27%20or%201%3D1--"))
	s.Complete()
	if !log.contains(`[id "942100"]`) || !log.contains(`[id "949110"]`) {
		t.Fatalf("matched rules not logged as ModSecurity lines: %v", log.lines)
	}
}

func TestRoutes(t *testing.T) {
	cfg := tierConfig(t, "headers-only")
	listener := mustEngine(t, cfg)
	tests := []struct {
		name      string
		rc        RouteConfig
		wantNil   bool
		wantMode  Mode
		wantBlock bool
	}{
		{"off", RouteConfig{Mode: ModeOff}, true, "", false},
		{"inherit blocking", RouteConfig{Mode: ModeBlock}, false, ModeBlock, true},
		{"inherit detect-only", RouteConfig{Mode: ModeDetect}, false, ModeDetect, false},
		{"own rules", RouteConfig{Mode: ModeBlock, Directives: []string{"SecRuleEngine On",
			`SecRule REQUEST_URI "@contains /other" "id:8001,phase:1,deny,log"`}}, false, ModeBlock, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRoute(tt.rc, nil)
			if err != nil {
				t.Fatal(err)
			}
			e, err := r.Engine(listener)
			if err != nil {
				t.Fatal(err)
			}
			if (e == nil) != tt.wantNil {
				t.Fatalf("engine nil = %v, want %v", e == nil, tt.wantNil)
			}
			d, _, out := run(t, cfg, e, get("/admin"), nil, 0)
			if blocked := d.Action == Reply; blocked != tt.wantBlock {
				t.Fatalf("blocked = %v, want %v", blocked, tt.wantBlock)
			}
			if tt.wantNil && out.Inspected {
				t.Fatal("route off still inspected")
			}
			if !tt.wantNil && e.Mode() != tt.wantMode {
				t.Fatalf("mode %s, want %s", e.Mode(), tt.wantMode)
			}
		})
	}
	if _, err := NewRoute(RouteConfig{Mode: ModeBlock, Directives: []string{"Bogus"}}, nil); err == nil {
		t.Fatal("a route with a bad directive must be rejected")
	}
}

func TestSplitAddress(t *testing.T) {
	tests := []struct {
		in       string
		fallback int
		ip       string
		port     int
	}{
		{"10.0.0.1:8080", 0, "10.0.0.1", 8080},
		{"10.0.0.1", 9000, "10.0.0.1", 9000},
		{"[::1]:443", 0, "::1", 443},
		{"::1", 80, "::1", 80},
		{"[::1]", 80, "::1", 80},
		{"", 0, "", 0},
	}
	if _, port := SplitAddress("10.0.0.1:8080", func() int { panic("port read although the address has one") }); port != 8080 {
		t.Errorf("port %d, want 8080", port)
	}
	for _, tt := range tests {
		ip, port := SplitAddress(tt.in, func() int { return tt.fallback })
		if ip != tt.ip || port != tt.port {
			t.Errorf("SplitAddress(%q, %d) = %q, %d; want %q, %d", tt.in, tt.fallback, ip, port, tt.ip, tt.port)
		}
	}
}

func TestConnectionAndHostReachCoraza(t *testing.T) {
	cfg := Config{Directives: []string{"SecRuleEngine On",
		`SecRule REMOTE_ADDR "@streq 192.0.2.7" "id:9001,phase:1,deny,status:401,log,chain"`,
		`SecRule REMOTE_PORT "@eq 5555" "chain"`,
		`SecRule SERVER_PORT "@eq 8443" "chain"`,
		`SecRule REQUEST_HEADERS:Host "@streq api.test:8443" "chain"`,
		`SecRule REQUEST_PROTOCOL "@streq HTTP/2.0" "t:none"`}}
	cfg.applyDefaults()
	req := get("/")
	req.Conn = Connection{ClientIP: "192.0.2.7", ClientPort: 5555, ServerIP: "192.0.2.1", ServerPort: 8443}
	req.Authority, req.Protocol = "api.test:8443", "HTTP/2"
	d, _, _ := run(t, cfg, mustEngine(t, cfg), req, nil, 0)
	if d.Action != Reply || d.Reply.Status != 401 {
		t.Fatalf("connection, Host or protocol did not reach Coraza: %+v", d)
	}
}

func TestCompleteWithoutTransaction(t *testing.T) {
	cfg := tierConfig(t, "headers-only")
	if out := NewStream(&cfg, nil, nil).Complete(); out.Inspected {
		t.Fatal("a stream that never started is not inspected")
	}
}

func TestArgumentFloodIsRejected(t *testing.T) {
	cfg := tierConfig(t, "full-crs")
	e := mustEngine(t, cfg)
	var b strings.Builder
	b.WriteString(`{"pad":[`)
	for i := range 1500 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("1")
	}
	b.WriteString(`],"q":"1' union select password from users--"}`)
	body := []byte(b.String())
	d, _, _ := run(t, cfg, e, post("/api", "application/json", len(body)), body, 16<<10)
	if d.Action != Reply || d.Reply.Status != 400 || d.Reply.Verdict.RuleID != 200005 {
		t.Fatalf("a JSON body of 1,500 arguments must be rejected by rule 200005: %+v", d.Reply)
	}
}

func TestRequestLineReachesCoraza(t *testing.T) {
	cfg := Config{Directives: []string{"SecRuleEngine On",
		`SecRule REQUEST_LINE "@streq CONNECT api.test:443 HTTP/1.1" "id:9101,phase:1,deny,status:418,log"`,
		`SecRule &REQUEST_HEADERS:Host "@eq 1" "id:9102,phase:1,deny,status:419,log,chain"`,
		`SecRule REQUEST_HEADERS:Host "@rx ^$" ""`}}
	cfg.applyDefaults()
	e := mustEngine(t, cfg)
	connect := get("")
	connect.Method, connect.Authority, connect.HasAuthority = "CONNECT", "api.test:443", true
	emptyHost := get("/")
	emptyHost.Authority, emptyHost.HasAuthority = "", true
	for _, tt := range []struct {
		name string
		req  RequestHead
		want int
	}{{"CONNECT targets the authority", connect, 418}, {"an empty Host is still a Host", emptyHost, 419}} {
		t.Run(tt.name, func(t *testing.T) {
			d, _, _ := run(t, cfg, e, tt.req, nil, 0)
			if d.Action != Reply || d.Reply.Status != tt.want {
				t.Fatalf("decision %+v, want status %d", d, tt.want)
			}
		})
	}
}

// Envoy's HTTP/1 codec consumes Transfer-Encoding; the filter restores it
// for Coraza exactly when the body can only have come chunked.
func TestChunkedOnTheWire(t *testing.T) {
	chunkedGet := get("/")
	chunkedGet.EndOfStream = false
	h2 := chunkedGet
	h2.Protocol = "HTTP/2"
	withLength := post("/", "text/plain", 3)
	handshake := chunkedGet
	handshake.Headers = append(append([]Header(nil), handshake.Headers...), Header{"connection", "upgrade"}, Header{"upgrade", "websocket"})
	connect := chunkedGet
	connect.Method = "CONNECT"
	teKept := chunkedGet
	teKept.Headers = append(append([]Header(nil), teKept.Headers...), Header{"transfer-encoding", "chunked"})
	tests := []struct {
		name string
		req  RequestHead
		want bool
	}{
		{"HTTP/1.1 body without Content-Length", chunkedGet, true},
		{"HTTP/1.1 without a body", get("/"), false},
		{"HTTP/1.1 body with Content-Length", withLength, false},
		{"HTTP/2 body without Content-Length (DATA frames)", h2, false},
		{"Transfer-Encoding still there", teKept, false},
		{"websocket handshake (a GET whose stream stays open)", handshake, false},
		{"CONNECT", connect, false},
	}
	for _, tt := range tests {
		if got := chunkedOnTheWire(tt.req); got != tt.want {
			t.Errorf("%s: chunkedOnTheWire = %v, want %v", tt.name, got, tt.want)
		}
	}
}
