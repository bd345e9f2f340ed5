package waf

import (
	"strconv"
	"strings"
)

// Envoy sends a local reply to a request it takes for gRPC in gRPC form:
// HTTP 200, the status in grpc-status. Through the dynamic-module ABI that
// status is 0 (OK) whatever the reply's HTTP status, so a call the filter
// denied, or failed closed, would look successful to its client. The
// filter's replies to such requests therefore carry their own grpc-status.

// envoyTakesForGRPC mirrors Envoy's test for a gRPC request: a content type
// of exactly "application/grpc" or starting with "application/grpc+"
// (case-sensitive). Other spellings get a plain HTTP reply from Envoy.
// It runs on every request: it walks the headers without collecting them.
func envoyTakesForGRPC(req RequestHead) bool {
	for _, h := range req.Headers {
		if !strings.EqualFold(h.Name, "content-type") {
			continue
		}
		if rest, ok := strings.CutPrefix(h.Value, "application/grpc"); ok && (rest == "" || rest[0] == '+') {
			return true
		}
	}
	return false
}

// grpcStatus returns the gRPC status headers for a local reply with this
// HTTP status, or none when the request is not gRPC.
func (s *Stream) grpcStatus(httpStatus int) []Header {
	if !s.grpc {
		return nil
	}
	return []Header{{Name: "grpc-status", Value: strconv.Itoa(grpcCodeFor(httpStatus))},
		{Name: "grpc-message", Value: "corazawaf: HTTP " + strconv.Itoa(httpStatus)}}
}

// grpcCodeFor maps an HTTP status onto a gRPC code as Envoy does for its
// own local replies (and the gRPC HTTP mapping document).
func grpcCodeFor(httpStatus int) int {
	switch httpStatus {
	case 400:
		return 13 // INTERNAL
	case 401:
		return 16 // UNAUTHENTICATED
	case 403:
		return 7 // PERMISSION_DENIED
	case 404:
		return 12 // UNIMPLEMENTED
	case 429, 502, 503, 504:
		return 14 // UNAVAILABLE
	default:
		return 2 // UNKNOWN
	}
}
