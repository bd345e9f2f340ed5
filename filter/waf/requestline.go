package waf

import (
	"net"
	"strconv"
	"strings"
)

// chunkedOnTheWire reports an HTTP/1.1 request that came with a chunked
// body: Envoy's codec consumes Transfer-Encoding before filters run (and
// frames the body chunked again upstream), so without it rules such as
// 920171 (GET or HEAD with Transfer-Encoding) never see what the client
// sent. An HTTP/1.1 request body without Content-Length can only be
// chunked, unless the request opens a tunnel (Upgrade, CONNECT): Envoy
// then leaves the stream open for the tunnel's bytes, body or none, and a
// websocket handshake is a GET whose stream never ends.
func chunkedOnTheWire(req RequestHead) bool {
	return req.Protocol == "HTTP/1.1" && !req.EndOfStream && req.Method != "CONNECT" &&
		!hasHeader(req.Headers, "upgrade") && !hasHeader(req.Headers, "content-length") &&
		!hasHeader(req.Headers, "transfer-encoding")
}

func bufferLimitFor(inspectionLimit int64) uint64 {
	if inspectionLimit <= 0 {
		return 0
	}
	return uint64(inspectionLimit) + bodyHeadroom
}

// corazaProtocol maps Envoy's protocol names onto the request-line form
// Coraza and CRS expect.
func corazaProtocol(p string) string {
	switch p {
	case "HTTP/2":
		return "HTTP/2.0"
	case "HTTP/3":
		return "HTTP/3.0"
	case "":
		return "HTTP/1.1"
	default:
		return p
	}
}

// requestTarget is the request line's target. CONNECT has no :path: its
// target is the authority (RFC 9110 9.3.6), not an empty string that would
// make the request line look malformed (CRS 920100).
func requestTarget(req RequestHead) string {
	if req.Path == "" && req.Method == "CONNECT" {
		return req.Authority
	}
	return req.Path
}

// isEventStream reports a server-sent event stream, which never ends as a
// body: the backend chose it, and only its headers are inspected (phase 3).
func isEventStream(contentType string) bool {
	mt, ok := mediaType(contentType)
	return ok && mt == "text/event-stream"
}

func hostWithoutPort(authority string) string {
	if host, _, err := net.SplitHostPort(authority); err == nil {
		return host
	}
	return authority
}

// SplitAddress parses an address attribute, which Envoy 1.40 gives with the
// port ("10.0.0.1:8080", "[::1]:8080") and earlier versions without ("::1").
// fallbackPort is called only when the attribute carries no port: reading
// the port attribute is one more call into Envoy, on every request.
func SplitAddress(addr string, fallbackPort func() int) (ip string, port int) {
	if host, p, err := net.SplitHostPort(addr); err == nil {
		if n, err := strconv.Atoi(p); err == nil {
			return host, n
		}
		return host, fallbackPort()
	}
	return strings.Trim(addr, "[]"), fallbackPort()
}
