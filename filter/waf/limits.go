package waf

import (
	"errors"
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
// has seen the body). Reading them by reflection is a deliberate, tested
// dependency on Coraza's internal field names (see limits_test.go): a Coraza
// upgrade that renames them fails the test instead of silently mis-sizing
// buffers.
func readBodyLimits(w coraza.WAF) (BodyLimits, error) {
	v := reflect.ValueOf(w)
	if v.Kind() == reflect.Struct {
		v = v.FieldByName("waf")
	}
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
		return BodyLimits{}, errors.New("cannot read Coraza's body limits: unexpected WAF type (Coraza version changed?)")
	}
	v = v.Elem()
	fields := map[string]reflect.Kind{
		"RequestBodyAccess": reflect.Bool, "RequestBodyLimit": reflect.Int64,
		"ResponseBodyAccess": reflect.Bool, "ResponseBodyLimit": reflect.Int64,
	}
	for name, kind := range fields {
		if f := v.FieldByName(name); !f.IsValid() || f.Kind() != kind {
			return BodyLimits{}, errors.New("cannot read Coraza's body limits: field " + name + " missing (Coraza version changed?)")
		}
	}
	return BodyLimits{
		RequestBodyAccess:  v.FieldByName("RequestBodyAccess").Bool(),
		RequestBodyLimit:   v.FieldByName("RequestBodyLimit").Int(),
		ResponseBodyAccess: v.FieldByName("ResponseBodyAccess").Bool(),
		ResponseBodyLimit:  v.FieldByName("ResponseBodyLimit").Int(),
	}, nil
}
