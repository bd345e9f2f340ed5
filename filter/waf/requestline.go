package waf

import (
	"net"
	"net/url"
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

// QueryPairHeader is the request header under which rules see a query
// argument whose name breaks out of markup or a string (nameBreaksOut),
// as the client sent it: name, '=' and value, still percent-encoded. Its
// ':' makes it a name no client can send (HTTP/2 pseudo-headers are
// Envoy's, and Envoy refuses unknown ones), so no header of the request is
// taken for it.
const QueryPairHeader = ":query-pair"

// injectedPairs calls add with each name=value pair of target's query
// whose name, decoded, breaks out of markup or a string. An injection
// that spans the '=' ending a name, such as a parameter named `"onfocus`
// with the script as its value, is split by the query's syntax into a
// name and a value that are each harmless to the rules (ARGS_NAMES,
// ARGS); joined they are what a page that reflects the query string
// renders. Only such pairs are joined: benign names never carry those
// characters, so rules see nothing more (and cost nothing more) on benign
// queries, while joining every pair, or handing rules the whole query as
// a header, makes CRS block benign requests (941120 on a value
// "online=yes", and on CRS's own negative test 941120-8, a name of spaces
// and letters; 942480 on SQL words across '&'; 920274 at paranoia level 4
// on any '?').
func injectedPairs(target string, add func(pair string)) {
	_, query, ok := strings.Cut(target, "?")
	if !ok {
		return
	}
	query, _, _ = strings.Cut(query, "#")
	for query != "" {
		var pair string
		pair, query, _ = strings.Cut(query, "&")
		name, _, hasValue := strings.Cut(pair, "=")
		if hasValue && nameBreaksOut(name) {
			add(pair)
		}
	}
}

// breakOut are the characters that end or open markup, a quoted string or
// a script expression: what a reflected name needs to become code.
const breakOut = "\"'`<>();\\"

// nameBreaksOut reports whether a query argument's name, decoded as
// Coraza decodes it for ARGS_NAMES, holds a breakOut character.
func nameBreaksOut(name string) bool {
	if strings.Contains(name, "%") {
		if decoded, err := url.QueryUnescape(name); err == nil {
			name = decoded
		}
	}
	return strings.ContainsAny(name, breakOut)
}
