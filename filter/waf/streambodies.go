package waf

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// StreamBodies names the requests whose bodies the operator lets stream to
// the backend uninspected. Nothing streams unless it is listed here: what a
// client puts in its headers (a gRPC content type, an Upgrade header, the
// CONNECT method) never decides on its own that a body escapes inspection.
type StreamBodies struct {
	// ContentTypes are media types ("application/grpc"), matched exactly
	// and case-insensitively against the request's media type with its
	// parameters removed. "application/grpc" does not cover
	// "application/grpc+proto": list every subtype the backend speaks.
	ContentTypes []string `json:"content_types"`
	// Upgrades are protocols of the Upgrade header ("websocket"), matched
	// case-insensitively against the whole header value, as Envoy's
	// upgrade_configs match them, plus "CONNECT" for the CONNECT method.
	Upgrades []string `json:"upgrades"`
}

// connectUpgrade is the Upgrades entry that covers the CONNECT method, the
// name Envoy's upgrade_configs use for it.
const connectUpgrade = "connect"

// bodyPolicy is what a request's headers say about its body.
type bodyPolicy int

const (
	// bodyInspected: the body is held and inspected (most requests).
	bodyInspected bodyPolicy = iota
	// bodyStreamed: the operator opted the request's kind in: phase 2 runs
	// at the headers and the body passes uninspected.
	bodyStreamed
	// tunnelRefused: an upgrade or CONNECT the operator did not opt in.
	// What follows its headers is a tunnel that never ends as a body, so it
	// cannot be held until phase 2: the handshake is inspected alone and any
	// data the client sends on the stream is refused.
	tunnelRefused
)

// normalize lowercases the lists once, at load, so matching is a compare.
func (sb *StreamBodies) normalize() {
	for i, ct := range sb.ContentTypes {
		sb.ContentTypes[i] = strings.ToLower(ct)
	}
	for i, u := range sb.Upgrades {
		sb.Upgrades[i] = strings.ToLower(u)
	}
}

// validate reports every bad entry; field names where the list is.
func (sb StreamBodies) validate(field string) error {
	var errs []error
	for i, ct := range sb.ContentTypes {
		if !isMediaType(ct) {
			errs = append(errs, fmt.Errorf("%s.content_types[%d] %q: give a media type such as application/grpc, without parameters or wildcards", field, i, ct))
		}
	}
	for i, u := range sb.Upgrades {
		if !isUpgradeProtocol(u) {
			errs = append(errs, fmt.Errorf("%s.upgrades[%d] %q: give an Upgrade protocol such as websocket, or CONNECT", field, i, u))
		}
	}
	return errors.Join(errs...)
}

// policyFor classifies a request by its headers. Every ambiguity (two
// Content-Type or Upgrade headers, several protocols in one Upgrade header)
// falls on the inspected or refused side: a client must not be able to make
// the filter and the backend read a request differently.
func (sb *StreamBodies) policyFor(req RequestHead) bodyPolicy {
	if protocol, ok := tunnelProtocol(req); ok {
		if protocol != "" && sb != nil && slices.Contains(sb.Upgrades, strings.ToLower(protocol)) {
			return bodyStreamed
		}
		return tunnelRefused
	}
	if sb == nil || len(sb.ContentTypes) == 0 {
		return bodyInspected
	}
	if values := headerValues(req.Headers, "content-type"); len(values) == 1 {
		if mt, ok := mediaType(values[0]); ok && slices.Contains(sb.ContentTypes, mt) {
			return bodyStreamed
		}
	}
	return bodyInspected
}

// tunnelProtocol reports whether the request opens a tunnel, as Envoy sees
// it: CONNECT, or an Upgrade header with "upgrade" among the Connection
// tokens (Envoy strips Upgrade from any other request before the filters
// run). protocol is the one protocol named, or "" when the request names
// none or several (never opted in).
func tunnelProtocol(req RequestHead) (protocol string, tunnel bool) {
	if req.Method == "CONNECT" {
		return connectUpgrade, true
	}
	upgrades := headerValues(req.Headers, "upgrade")
	if len(upgrades) == 0 || !hasToken(headerValues(req.Headers, "connection"), "upgrade") {
		return "", false
	}
	if len(upgrades) != 1 || strings.Contains(upgrades[0], ",") {
		return "", true
	}
	return strings.TrimSpace(upgrades[0]), true
}

// declaresBody reports whether the request announces a body of its own,
// which a tunnel request has no use for.
func declaresBody(req RequestHead) bool {
	if hasHeader(req.Headers, "transfer-encoding") {
		return true
	}
	for _, v := range headerValues(req.Headers, "content-length") {
		if strings.TrimSpace(v) != "0" {
			return true
		}
	}
	return false
}

// mediaType is the lowercased type/subtype of a Content-Type value, its
// parameters dropped; ok is false when the value has no valid media type.
func mediaType(value string) (string, bool) {
	mt, _, _ := strings.Cut(value, ";")
	mt = strings.ToLower(strings.Trim(mt, " \t"))
	return mt, isMediaType(mt)
}

// isMediaType accepts "type/subtype" made of RFC 9110 token characters,
// except "*": a wildcard would let the client pick the subtype.
func isMediaType(s string) bool {
	typ, sub, ok := strings.Cut(s, "/")
	return ok && isToken(typ) && isToken(sub) && !strings.Contains(s, "*")
}

// isUpgradeProtocol accepts an RFC 9110 protocol: token ["/" token].
func isUpgradeProtocol(s string) bool {
	name, version, hasVersion := strings.Cut(s, "/")
	return isToken(name) && (!hasVersion || isToken(version))
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// headerValues returns every value of a header, by case-insensitive name.
func headerValues(headers []Header, name string) []string {
	var values []string
	for _, h := range headers {
		if strings.EqualFold(h.Name, name) {
			values = append(values, h.Value)
		}
	}
	return values
}

// hasHeader reports whether headers have a field name, without collecting
// values: it runs on every request.
func hasHeader(headers []Header, name string) bool {
	return slices.ContainsFunc(headers, func(h Header) bool { return strings.EqualFold(h.Name, name) })
}

// hasToken reports whether a comma-separated header lists token.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
