// Package waf is the WAF logic of corazawaf, independent of Envoy.
//
// It turns the filter configuration into a Coraza WAF (Engine) and drives one
// Coraza transaction per HTTP stream (Stream), deciding at each step of the
// stream whether Envoy should let the data through, hold it, or answer with a
// local reply. It has no cgo and no Envoy dependency: the ABI binding in
// filter/internal/abi translates Envoy's hooks into calls on this package and
// its decisions back into Envoy callbacks, so everything here is testable with
// plain `go test`.
//
// A stream's code, by concern: decision.go (what a hook returns to the
// binding), stream.go (the request's hooks, in the order Envoy calls them),
// response.go (the response's), replies.go (interruptions and local
// replies), complete.go (completion, release, the body budget, timers and
// logs), requestline.go (how Envoy's request becomes Coraza's request line);
// streambodies.go decides what is streamed uninspected.
package waf
