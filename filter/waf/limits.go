package waf

import (
	"fmt"
	"reflect"

	"github.com/corazawaf/coraza/v3"
)

// BodyLimits are the body inspection settings a rule set ended up with after
// all its directives and includes.
type BodyLimits struct {
	RequestBodyAccess  bool
	RequestBodyLimit   int64
	ResponseBodyAccess bool
	ResponseBodyLimit  int64
}

// readBodyLimits reads the settings from the built WAF. Coraza v3 has no
// public getter for them, and the glue needs them to raise Envoy's per-stream
// buffer limit to the inspection limit (or Envoy answers 413 before the WAF
// has seen the body). See internals.go.
func readBodyLimits(w coraza.WAF) (BodyLimits, error) {
	v, err := corazaWAF(w)
	if err != nil {
		return BodyLimits{}, fmt.Errorf("reading the body limits: %w", err)
	}
	var l BodyLimits
	for _, f := range []struct {
		name string
		kind reflect.Kind
		set  func(reflect.Value)
	}{
		{"RequestBodyAccess", reflect.Bool, func(v reflect.Value) { l.RequestBodyAccess = v.Bool() }},
		{"RequestBodyLimit", reflect.Int64, func(v reflect.Value) { l.RequestBodyLimit = v.Int() }},
		{"ResponseBodyAccess", reflect.Bool, func(v reflect.Value) { l.ResponseBodyAccess = v.Bool() }},
		{"ResponseBodyLimit", reflect.Int64, func(v reflect.Value) { l.ResponseBodyLimit = v.Int() }},
	} {
		fv, err := field(v, f.name, f.kind)
		if err != nil {
			return BodyLimits{}, fmt.Errorf("reading the body limits: %w", err)
		}
		f.set(fv)
	}
	return l, nil
}
