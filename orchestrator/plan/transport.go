package plan

import (
	"fmt"
	"slices"
)

// Protocols the load generator speaks to the proxy. Behind the proxy the
// backend is always spoken to over HTTP/1.1 in clear, so only the edge
// changes.
const (
	ProtocolH1 = "h1" // HTTP/1.1
	ProtocolH2 = "h2" // HTTP/2: prior-knowledge h2c in clear, ALPN over TLS
)

// Protocols lists the protocols in the order the docs present them.
func Protocols() []string { return []string{ProtocolH1, ProtocolH2} }

// Transport is how the load generator reaches the proxy: a plan-wide
// setting, so every configuration of a sweep is measured alike and the
// sweep's baselines (vanilla Envoy, direct) share it.
type Transport struct {
	Protocol string // ProtocolH1 or ProtocolH2; empty reads as ProtocolH1
	TLS      bool   // the proxy terminates TLS with a certificate made for the run
}

// protocol is Protocol with empty read as HTTP/1.1 (a zero Transport).
func (t Transport) protocol() string {
	if t.Protocol == "" {
		return ProtocolH1
	}
	return t.Protocol
}

// Transport is the plan's.
func (p Plan) Transport() Transport { return Transport{Protocol: p.Protocol, TLS: p.TLS} }

// Name is how reports and logs name the transport: "h1", "h2", "h1+tls",
// "h2+tls".
func (t Transport) Name() string {
	if t.TLS {
		return t.protocol() + "+tls"
	}
	return t.protocol()
}

// IsDefault reports HTTP/1.1 in clear: what every sweep measured before
// the transport could be chosen, and what reports need not mention.
func (t Transport) IsDefault() bool { return t.protocol() == ProtocolH1 && !t.TLS }

// HTTP2 reports whether the load speaks HTTP/2.
func (t Transport) HTTP2() bool { return t.protocol() == ProtocolH2 }

func (p Plan) checkTransport() []error {
	if !slices.Contains(Protocols(), p.Protocol) {
		return []error{fmt.Errorf("protocol %q: use %s", p.Protocol, oneOf(Protocols()))}
	}
	return nil
}
