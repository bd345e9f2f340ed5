// Package waf is the WAF logic of corazawaf, independent of Envoy.
//
// It turns the filter configuration into a Coraza WAF (Engine) and drives one
// Coraza transaction per HTTP stream (Stream), deciding at each step of the
// stream whether Envoy should let the data through, hold it, or answer with a
// local reply. It has no cgo and no Envoy dependency: the ABI binding in
// filter/internal/abi translates Envoy's hooks into calls on this package and
// its decisions back into Envoy callbacks, so everything here is testable with
// plain `go test`.
package waf
