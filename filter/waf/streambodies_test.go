package waf

import (
	"strings"
	"testing"
)

// grpcAttack is a form-shaped SQL injection: the rule set below parses
// gRPC-labelled bodies as forms, as an operator who allows gRPC through
// CRS would have to for its rules to see them.
const grpcAttack = "id=1' UNION SELECT password FROM users--"

func streamConfig(t *testing.T, bodies StreamBodies) Config {
	t.Helper()
	cfg := tierConfig(t, "targeted",
		`SecRule REQUEST_HEADERS:Content-Type "@rx (?i)^\s*application/grpc" "id:100003,phase:1,t:none,pass,nolog,ctl:requestBodyProcessor=URLENCODED"`)
	cfg.StreamBodies = bodies
	cfg.StreamBodies.normalize()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func withHeaders(req RequestHead, headers ...Header) RequestHead {
	req.Headers = append(append([]Header(nil), req.Headers...), headers...)
	return req
}

// websocketGet is a genuine opening handshake as Envoy hands it over: no
// body, but the stream stays open for the tunnel.
func websocketGet(headers ...Header) RequestHead {
	req := get("/ws")
	req.EndOfStream = false
	return withHeaders(req, append([]Header{{"connection", "Upgrade"}, {"upgrade", "websocket"}, {"sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="}}, headers...)...)
}

func TestPolicyForRequest(t *testing.T) {
	grpc := StreamBodies{ContentTypes: []string{"Application/GRPC"}, Upgrades: []string{"WebSocket", "CONNECT"}}
	grpc.normalize()
	form := func(ct string) RequestHead { return post("/api", ct, 10) }
	connect := get("")
	connect.Method, connect.Authority, connect.EndOfStream = "CONNECT", "api.test:443", false
	tests := []struct {
		name   string
		bodies *StreamBodies
		req    RequestHead
		want   bodyPolicy
	}{
		{"gRPC without opt-in", nil, form("application/grpc"), bodyInspected},
		{"gRPC listed", &grpc, form("application/grpc"), bodyStreamed},
		{"case and parameters are ignored", &grpc, form("Application/GRPC ; x"), bodyStreamed},
		{"tabs around the media type", &grpc, form("\tapplication/grpc\t;charset=utf-8"), bodyStreamed},
		{"a subtype suffix is another type", &grpc, form("application/grpc+proto"), bodyInspected},
		{"a prefix is not the type", &grpc, form("application/grpcx"), bodyInspected},
		{"a list is not a media type", &grpc, form("application/grpc, application/json"), bodyInspected},
		{"no subtype", &grpc, form("application/"), bodyInspected},
		{"two Content-Type headers", &grpc, withHeaders(form("application/grpc"), Header{"Content-Type", "application/grpc"}), bodyInspected},
		{"gRPC and a second type", &grpc, withHeaders(form("application/grpc"), Header{"content-type", "application/json"}), bodyInspected},
		{"Upgrade without Connection: upgrade", &grpc, withHeaders(form("application/json"), Header{"upgrade", "websocket"}), bodyInspected},
		{"websocket handshake, not listed", nil, websocketGet(), tunnelRefused},
		{"websocket handshake, listed", &grpc, websocketGet(), bodyStreamed},
		{"Upgrade: WebSocket on a POST, listed", &grpc, withHeaders(form("application/json"), Header{"connection", "keep-alive, Upgrade"}, Header{"upgrade", "WebSocket"}), bodyStreamed},
		{"Upgrade: h2c is not listed", &grpc, withHeaders(form("application/json"), Header{"connection", "upgrade"}, Header{"upgrade", "h2c"}), tunnelRefused},
		{"several protocols in one Upgrade", &grpc, withHeaders(form("application/json"), Header{"connection", "upgrade"}, Header{"upgrade", "foo, websocket"}), tunnelRefused},
		{"two Upgrade headers", &grpc, withHeaders(websocketGet(), Header{"upgrade", "websocket"}), tunnelRefused},
		{"a versioned protocol is another protocol", &grpc, withHeaders(form("application/json"), Header{"connection", "upgrade"}, Header{"upgrade", "websocket/13"}), tunnelRefused},
		{"CONNECT, not listed", nil, connect, tunnelRefused},
		{"CONNECT, listed", &grpc, connect, bodyStreamed},
		{"a gRPC tunnel is judged as a tunnel", &grpc, withHeaders(form("application/grpc"), Header{"connection", "upgrade"}, Header{"upgrade", "h2c"}), tunnelRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.bodies.policyFor(tt.req); got != tt.want {
				t.Fatalf("policy %d, want %d", got, tt.want)
			}
		})
	}
}

// An attack body is stopped before the backend whatever the client labels
// it, unless the operator lists the label: then it streams, by decision.
func TestBodiesStreamOnlyWhenOptedIn(t *testing.T) {
	optIn := StreamBodies{ContentTypes: []string{"application/grpc", "application/grpc+proto"}, Upgrades: []string{"websocket"}}
	upgradePost := func(ct string) RequestHead {
		return withHeaders(post("/api", ct, len(grpcAttack)), Header{"connection", "Upgrade"}, Header{"upgrade", "WebSocket"})
	}
	tests := []struct {
		name         string
		req          RequestHead
		body         string
		withoutOptIn Action // and status 403 when Reply
		withOptIn    Action
	}{
		{"gRPC attack", post("/api", "application/grpc", len(grpcAttack)), grpcAttack, Reply, Continue},
		{"Application/GRPC attack", post("/api", "Application/GRPC", len(grpcAttack)), grpcAttack, Reply, Continue},
		{"gRPC with parameters", post("/api", "application/grpc; charset=utf-8", len(grpcAttack)), grpcAttack, Reply, Continue},
		{"gRPC+proto attack", post("/api", "application/grpc+proto", len(grpcAttack)), grpcAttack, Reply, Continue},
		{"gRPC+json is not listed", post("/api", "application/grpc+json", len(grpcAttack)), grpcAttack, Reply, Reply},
		{"Upgrade: WebSocket on a POST with a body", upgradePost("application/x-www-form-urlencoded"), grpcAttack, Reply, Continue},
		{"benign gRPC", post("/api", "application/grpc", 7), "id=1234", Continue, Continue},
	}
	for _, tt := range tests {
		for _, c := range []struct {
			label  string
			bodies StreamBodies
			want   Action
		}{{"without opt-in", StreamBodies{}, tt.withoutOptIn}, {"with opt-in", optIn, tt.withOptIn}} {
			t.Run(tt.name+"/"+c.label, func(t *testing.T) {
				cfg := streamConfig(t, c.bodies)
				s := NewStream(&cfg, mustEngine(t, cfg), nil)
				defer s.Complete()
				d := sendRequest(s, tt.req, []byte(tt.body), 8)
				if d.Action != c.want {
					t.Fatalf("decision %+v, want action %d", d, c.want)
				}
				if d.Action == Reply && d.Reply.Status != 403 {
					t.Fatalf("reply status %d, want 403", d.Reply.Status)
				}
			})
		}
	}
}

// A WebSocket handshake has no body: it is inspected and forwarded at its
// headers either way. Without the opt-in the tunnel's data is refused.
func TestWebSocketHandshake(t *testing.T) {
	for _, tt := range []struct {
		name     string
		bodies   StreamBodies
		wantData Action
	}{
		{"not listed", StreamBodies{}, Reply},
		{"listed", StreamBodies{Upgrades: []string{"websocket"}}, Continue},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := streamConfig(t, tt.bodies)
			s := NewStream(&cfg, mustEngine(t, cfg), nil)
			defer s.Complete()
			if d := s.OnRequestHeaders(websocketGet()); d.Action != Continue {
				t.Fatalf("handshake: %+v, want Continue (a held handshake stalls)", d)
			}
			if d := s.OnResponseHeaders(101, []Header{{"upgrade", "websocket"}, {"connection", "Upgrade"}}, false); d.Action != Continue {
				t.Fatalf("101 response: %+v", d)
			}
			if d := s.OnRequestBody([][]byte{[]byte("\x81\x05hello")}, false); d.Action != tt.wantData {
				t.Fatalf("tunnel data: %+v, want %d", d, tt.wantData)
			}
		})
	}
	t.Run("attack in the handshake is stopped", func(t *testing.T) {
		cfg := streamConfig(t, StreamBodies{Upgrades: []string{"websocket"}})
		s := NewStream(&cfg, mustEngine(t, cfg), nil)
		defer s.Complete()
		req := websocketGet()
		req.Path = "/ws?id=1'%20UNION%20SELECT%20password%20FROM%20users--"
		if d := s.OnRequestHeaders(req); d.Action != Reply {
			t.Fatalf("handshake with SQLi in the query: %+v", d)
		}
	})
}

// A tunnel request that declares a body of its own is refused at its
// headers unless listed: Envoy never ends such a body.
func TestTunnelWithBodyIsRefused(t *testing.T) {
	cfg := streamConfig(t, StreamBodies{})
	for _, h := range []Header{{"content-length", "12"}, {"transfer-encoding", "chunked"}} {
		s := NewStream(&cfg, mustEngine(t, cfg), nil)
		d := s.OnRequestHeaders(websocketGet(h))
		s.Complete()
		if d.Action != Reply || d.Reply.Status != 403 || d.Reply.Details != "corazawaf_tunnel_not_streamed" {
			t.Fatalf("%s: %+v", h.Name, d)
		}
	}
	s := NewStream(&cfg, mustEngine(t, cfg), nil)
	defer s.Complete()
	if d := s.OnRequestHeaders(websocketGet(Header{"content-length", "0"})); d.Action != Continue {
		t.Fatalf("a handshake with Content-Length: 0 declares no body: %+v", d)
	}
}

func TestStreamBodiesValidation(t *testing.T) {
	tests := []struct {
		json, wantErr string
	}{
		{`{"stream_bodies":{"content_types":["application/grpc","Application/GRPC+Proto"],"upgrades":["websocket","CONNECT"]}}`, ""},
		{`{"stream_bodies":{"content_types":["application/grpc; charset=utf-8"]}}`, "stream_bodies.content_types[0]"},
		{`{"stream_bodies":{"content_types":["application/*"]}}`, "without parameters or wildcards"},
		{`{"stream_bodies":{"content_types":["grpc"]}}`, "content_types[0]"},
		{`{"stream_bodies":{"content_types":[""]}}`, "content_types[0]"},
		{`{"stream_bodies":{"upgrades":["websocket, h2c"]}}`, "stream_bodies.upgrades[0]"},
		{`{"stream_bodies":{"upgrades":[" websocket"]}}`, "upgrades[0]"},
		{`{"stream_bodies":{"upgrade":["websocket"]}}`, "unknown field"},
		{`{"stream_bodies":{"content_types":"application/grpc"}}`, "cannot unmarshal"},
	}
	for _, tt := range tests {
		cfg, err := ParseConfig([]byte(tt.json))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tt.json, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want it to mention %q", tt.json, err, tt.wantErr)
		case err == nil && cfg.StreamBodies.ContentTypes[1] != "application/grpc+proto":
			t.Errorf("content types not lowercased: %q", cfg.StreamBodies.ContentTypes)
		}
	}
	if _, err := ParseRouteConfig([]byte(`{"stream_bodies":{"upgrades":["web socket"]}}`)); err == nil || !strings.Contains(err.Error(), "per-route stream_bodies.upgrades[0]") {
		t.Errorf("per-route: %v", err)
	}
}

// A route's stream_bodies replaces the listener's, an empty one included.
func TestRouteStreamBodiesOverride(t *testing.T) {
	f, err := NewFilter([]byte(`{"directives":["Include `+rulesetPath(t, "targeted")+`"],"stream_bodies":{"content_types":["application/grpc"]}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	req := post("/api", "application/grpc", 4)
	for _, tt := range []struct {
		route string
		want  Action
	}{{`{}`, Continue}, {`{"stream_bodies":{}}`, Hold}, {`{"stream_bodies":{"content_types":["application/grpc"]}}`, Continue}} {
		rc, err := ParseRouteConfig([]byte(tt.route))
		if err != nil {
			t.Fatal(err)
		}
		route, err := NewRoute(rc, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.NewStream(route)
		if err != nil {
			t.Fatal(err)
		}
		if d := s.OnRequestHeaders(req); d.Action != tt.want {
			t.Errorf("route %s: %+v, want %d", tt.route, d, tt.want)
		}
		s.Complete()
	}
}

// An event stream never ends as a body: the backend's choice of it keeps
// the response streaming, headers inspected, body not.
func TestEventStreamResponseStreams(t *testing.T) {
	cfg := Config{Directives: []string{"SecRuleEngine On", "SecResponseBodyAccess On", "SecResponseBodyMimeType text/event-stream text/event-streamx text/plain",
		`SecRule RESPONSE_HEADERS:X-Leak "@streq yes" "id:5002,phase:3,deny,log"`}}
	cfg.applyDefaults()
	e := mustEngine(t, cfg)
	for _, tt := range []struct {
		name    string
		headers []Header
		want    Action
	}{
		{"event stream", []Header{{"content-type", "Text/Event-Stream; charset=utf-8"}}, Continue},
		{"event stream headers are inspected", []Header{{"content-type", "text/event-stream"}, {"x-leak", "yes"}}, Reply},
		{"a longer type is not an event stream", []Header{{"content-type", "text/event-streamx"}}, Hold},
		{"plain text is held for inspection", []Header{{"content-type", "text/plain"}}, Hold},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStream(&cfg, e, nil)
			defer s.Complete()
			s.OnRequestHeaders(get("/events"))
			if d := s.OnResponseHeaders(200, tt.headers, false); d.Action != tt.want {
				t.Fatalf("%+v, want %d", d, tt.want)
			}
		})
	}
}

// The filter's replies to what Envoy takes for gRPC carry a gRPC status of
// their own (Envoy's would say OK); other requests get none.
func TestGRPCRepliesCarryTheirStatus(t *testing.T) {
	cfg := streamConfig(t, StreamBodies{})
	cfg.FailureStatus = 503
	e := mustEngine(t, cfg)
	tests := []struct {
		contentType string
		wantDeny    string // grpc-status of a denial, "" for none
		wantFailure string
	}{
		{"application/grpc", "7", "14"},
		{"application/grpc+proto", "7", "14"},
		{"Application/GRPC", "", ""}, // Envoy's test is case-sensitive
		{"application/grpc-web", "", ""},
		{"application/x-www-form-urlencoded", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			s := NewStream(&cfg, e, nil)
			defer s.Complete()
			d := sendRequest(s, post("/api", tt.contentType, len(grpcAttack)), []byte(grpcAttack), 64)
			if d.Action != Reply {
				t.Fatalf("decision %+v", d)
			}
			if got := headerValues(d.Reply.Headers, "grpc-status"); len(got) > 1 || strings.Join(got, "") != tt.wantDeny {
				t.Errorf("denial grpc-status %q, want %q", got, tt.wantDeny)
			}
			if got := headerValues(s.FailureReply().Headers, "grpc-status"); strings.Join(got, "") != tt.wantFailure {
				t.Errorf("failure grpc-status %q, want %q", got, tt.wantFailure)
			}
		})
	}
}

// Detect mode never blocks: an unlisted tunnel's data is recorded as what
// would have been refused, and passes.
func TestTunnelRefusalFollowsTheRuleEngine(t *testing.T) {
	cfg := streamConfig(t, StreamBodies{})
	cfg.Mode = ModeDetect
	s := NewStream(&cfg, mustEngine(t, cfg), nil)
	if d := s.OnRequestHeaders(websocketGet()); d.Action != Continue {
		t.Fatalf("handshake: %+v", d)
	}
	for range 2 {
		if d := s.OnRequestBody([][]byte{[]byte("data")}, false); d.Action != Continue {
			t.Fatalf("detect mode refused tunnel data: %+v", d)
		}
	}
	out := s.Complete()
	if out.Blocked != nil || out.Detected == nil || out.Detected.Status != 403 || out.Detected.Phase != "request_body" {
		t.Fatalf("outcome %+v / detected %+v, want a detected, unblocked refusal", out.Blocked, out.Detected)
	}
}
