package e2e

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
)

// sqliForm is a SQL injection in a form-shaped body. The rule set parses
// gRPC-labelled bodies as forms and allows the gRPC types (CRS 920420
// would refuse them by type otherwise): an operator who lets gRPC through
// the CRS must not thereby let uninspected bodies through.
const sqliForm = "id=1' UNION SELECT password FROM users--"

// optInPrefix is the route whose per-route config opts gRPC and WebSocket
// in; every other path uses the listener's config, which opts nothing in.
const optInPrefix = "/optin"

// streamingConfig is full CRS with the gRPC content types allowed and their
// bodies parsed as forms (see sqliForm); the evasion matrix runs it too.
const streamingConfig = `{"directives":["Include @coraza.conf","SecRuleEngine On","SecRequestBodyLimitAction ProcessPartial","SecResponseBodyAccess Off",` +
	`"Include @crs-setup.conf",` +
	`"SecAction \"id:900220,phase:1,pass,nolog,t:none,setvar:'tx.allowed_request_content_type=|application/x-www-form-urlencoded| |application/json| |application/grpc| |application/grpc+proto| |application/grpc+json|'\"",` +
	`"SecRule REQUEST_HEADERS:Content-Type \"@rx (?i)^\\s*application/grpc\" \"id:1001,phase:1,t:none,pass,nolog,ctl:requestBodyProcessor=URLENCODED\"",` +
	`"Include @owasp_crs/*.conf"]}`

// streamingOptIn is the per-route config of optInPrefix.
const streamingOptIn = `{"stream_bodies":{"content_types":["application/grpc","application/grpc+proto"],"upgrades":["websocket"]}}`

func streamingProxy(t *testing.T) *proxy {
	t.Helper()
	optIn := streamingOptIn
	return startProxy(t, proxyOptions{config: streamingConfig, upgrades: []string{"websocket"},
		routes: []envoyconfig.Route{{Prefix: optInPrefix, PerRouteWAF: &optIn}, {Prefix: "/"}}})
}

// reached runs a request and reports how many requests the backend got.
func (p *proxy) reached(send func()) int64 {
	before := p.backend.Stats().Requests
	send()
	time.Sleep(100 * time.Millisecond) // the backend counts after its handler read the body
	return p.backend.Stats().Requests - before
}

// The evasion matrix: an attack body labelled as a stream is stopped before
// the backend unless the route opts its label in; then it streams, by the
// operator's decision. Benign bodies reach the backend whole.
func TestStreamingLabelsDoNotBypassInspection(t *testing.T) {
	p := streamingProxy(t)
	variants := []struct {
		contentType string
		optedIn     bool // listed on the opt-in route
	}{
		{"application/grpc", true},
		{"Application/GRPC", true},
		{"application/grpc; charset=utf-8", true},
		{"APPLICATION/GRPC+PROTO", true},
		{"application/grpc+json", false}, // not listed: inspected everywhere
	}
	for _, v := range variants {
		for _, route := range []string{"/api", optInPrefix + "/api"} {
			for _, h2 := range []bool{false, true} {
				name := fmt.Sprintf("%s%s/h2=%v", v.contentType, route, h2)
				t.Run(name, func(t *testing.T) {
					streams := v.optedIn && strings.HasPrefix(route, optInPrefix)
					var resp response
					n := p.reached(func() {
						resp = p.do(t, request{method: "POST", path: route, body: sqliForm, contentType: v.contentType, http2: h2})
					})
					switch {
					case streams && (resp.status != 200 || n != 1):
						t.Fatalf("opted in: status %d, backend got %d requests; want the body streamed (200, 1)", resp.status, n)
					case !streams && (!denied(resp) || n != 0):
						t.Fatalf("BYPASS: status %d (grpc-status %q), backend got %d requests; want a denial before the backend",
							resp.status, resp.headers.Get("Grpc-Status"), n)
					}
					benign := "id=1234&name=widget"
					n = p.reached(func() {
						resp = p.do(t, request{method: "POST", path: route, body: benign, contentType: v.contentType, http2: h2})
					})
					if resp.status != 200 || n != 1 || resp.headers.Get("X-Backend-Body-Bytes") != fmt.Sprint(len(benign)) {
						t.Fatalf("benign body: status %d, backend got %d requests, %s bytes", resp.status, n, resp.headers.Get("X-Backend-Body-Bytes"))
					}
				})
			}
		}
	}
	// Envoy takes the bytes after an upgrade request's headers for the
	// tunnel, whatever its Content-Length. Not opted in, the filter refuses
	// the request at its headers. Opted in, it streams: the backend gets the
	// request (a Go server reads no body and leaves the bytes for a next
	// request) and no answer comes back within 5 s; Envoy does the same with
	// the filter off on the route.
	// Two Content-Type headers: the backend may read either; never streamed.
	t.Run("duplicate Content-Type", func(t *testing.T) {
		for _, route := range []string{"/api", optInPrefix + "/api"} {
			var status int
			n := p.reached(func() {
				status, _ = p.rawStatus(t, "POST "+route+" HTTP/1.1\r\nHost: shop.wafsweep.test\r\nUser-Agent: wafsweep-e2e/1.0\r\nAccept: */*\r\n"+
					"Content-Type: application/grpc\r\nContent-Type: application/x-www-form-urlencoded\r\n"+
					fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(sqliForm), sqliForm))
			})
			t.Logf("%s: status %d (%s), backend got %d", route, status, p.lastDetails(t), n)
			if n != 0 {
				t.Errorf("BYPASS %s: status %d, backend got %d requests", route, status, n)
			}
		}
	})
	t.Run("upgrade headers on a POST", func(t *testing.T) {
		for _, tt := range []struct {
			name, headers string
			optInStreams  bool // the opt-in route lets it through uninspected
		}{
			{"Upgrade: WebSocket", "Connection: Upgrade\r\nUpgrade: WebSocket\r\n", true},
			// Envoy removes Upgrade from a request that is not an upgrade.
			{"Upgrade without Connection: upgrade", "Upgrade: websocket\r\n", false},
			// Not in upgrade_configs: Envoy refuses them before the filter.
			{"Upgrade: h2c", "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n", false},
			{"Upgrade: foo, websocket", "Connection: Upgrade\r\nUpgrade: foo, websocket\r\n", false},
		} {
			for _, route := range []string{"/api", optInPrefix + "/api"} {
				streams := tt.optInStreams && route != "/api"
				var status int
				n := p.reached(func() {
					status, _ = p.rawStatus(t, "POST "+route+" HTTP/1.1\r\nHost: shop.wafsweep.test\r\nUser-Agent: wafsweep-e2e/1.0\r\nAccept: */*\r\n"+
						tt.headers+"Content-Type: application/x-www-form-urlencoded\r\n"+
						fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(sqliForm), sqliForm))
				})
				t.Logf("%s %s: status %d (%s), backend got %d", tt.name, route, status, p.lastDetails(t), n)
				switch {
				case streams && n != 1:
					t.Errorf("%s %s: opted in, backend got %d requests, want 1", tt.name, route, n)
				case !streams && (n != 0 || status != 403):
					t.Errorf("BYPASS %s %s: status %d, backend got %d requests; want 403 before the backend", tt.name, route, status, n)
				}
			}
		}
	})
}

// denied reports the filter's 403. Envoy turns a local reply to a request
// it takes for gRPC (content type application/grpc or application/grpc+...,
// case-sensitive) into a gRPC answer: HTTP 200 with grpc-status 7
// (PERMISSION_DENIED).
func denied(r response) bool {
	grpcStatus := r.headers.Values("Grpc-Status")
	return r.status == 403 || (r.status == 200 && len(grpcStatus) == 1 && grpcStatus[0] == "7")
}

// A real WebSocket handshake has no body: it passes with or without the
// opt-in. Its data flows only where the route opts WebSocket in.
func TestWebSocketHandshakePasses(t *testing.T) {
	p := streamingProxy(t)
	for _, tt := range []struct {
		route    string
		dataEcho bool
	}{{"/ws", false}, {optInPrefix + "/ws", true}} {
		t.Run(tt.route, func(t *testing.T) {
			conn, r := p.dialWebSocket(t, tt.route)
			defer conn.Close()
			frame := "\x81\x05hello"
			if _, err := io.WriteString(conn, frame); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(frame))
			conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			_, err := io.ReadFull(r, got)
			switch {
			case tt.dataEcho && (err != nil || string(got) != frame):
				t.Fatalf("opted in: the tunnel's data did not come back: %q, %v", got, err)
			case !tt.dataEcho && err == nil:
				t.Fatalf("not opted in: the tunnel's data reached the backend and came back: %q", got)
			}
		})
	}
}

// dialWebSocket opens a WebSocket through the proxy and checks the 101.
func (p *proxy) dialWebSocket(t *testing.T, path string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p.port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	key := base64.StdEncoding.EncodeToString([]byte("wafsweep-e2e-key"))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: shop.wafsweep.test\r\nUser-Agent: wafsweep-e2e/1.0\r\nAccept: */*\r\n"+
		"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n\r\n", path, key)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("handshake through %s: %v (a held handshake stalls)\n%s", path, err, p.logTail())
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if resp.StatusCode != 101 || resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		t.Fatalf("handshake through %s: status %d, headers %v", path, resp.StatusCode, resp.Header)
	}
	return conn, r
}

// rawStatus writes a raw HTTP/1.1 request and reads the answer's status;
// 0 means no answer within 5 s or the connection closed first.
func (p *proxy) rawStatus(t *testing.T, raw string) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p.port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Backend-Body-Bytes")
}

// A gRPC call the filter fails closed on is not answered "OK": Envoy sends
// the failure reply in gRPC form, with the status the filter gives it.
func TestFailedGRPCCallIsNotOK(t *testing.T) {
	p := startProxy(t, proxyOptions{config: panicConfig(t, "closed"), module: modulePath(t, "CORAZAWAF_TEST_MODULE", "test/libcorazawaf.so")})
	for _, step := range []string{"request_headers", "request_body"} {
		n := p.reached(func() {
			resp := p.do(t, request{path: "/svc/Method", body: "id=1", contentType: "application/grpc", http2: true,
				headers: map[string]string{"x-corazawaf-panic": step}})
			if got := resp.headers.Values("Grpc-Status"); resp.status != 200 || len(got) != 1 || got[0] != "14" {
				t.Errorf("panic in %s: status %d, grpc-status %q; want 200 with grpc-status 14 (UNAVAILABLE, for 503)", step, resp.status, got)
			}
		})
		if n != 0 {
			t.Errorf("panic in %s: the backend got the call", step)
		}
	}
}

// lastDetails is the response code details of the last access log entry:
// who answered (Envoy, a rule, the tunnel refusal).
func (p *proxy) lastDetails(t *testing.T) string {
	time.Sleep(150 * time.Millisecond) // the access log flushes every 100 ms
	entries := readAccessLog(t, p.accLog)
	if len(entries) == 0 {
		return "no access log entry"
	}
	return entries[len(entries)-1].ResponseCodeDetails
}
