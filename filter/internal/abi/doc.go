// Package abi binds corazawaf to Envoy's dynamic-module ABI (HTTP filters).
//
// It is deliberately thin: every exported hook looks up its Go object by an
// integer handle, translates Envoy's data into the types of package waf,
// calls it, and translates the decision back into a hook status and
// callbacks. Envoy only ever holds integer handles (runtime/cgo.Handle), never
// Go pointers, so Envoy runs with the default cgocheck. Every hook recovers
// panics (see barrier.go): the stream gets the configured failure answer and
// Envoy keeps serving.
//
// The handle tables of runtime/cgo are the only process-wide state; they are
// what a c-shared entry point needs to find its objects again.
package abi
