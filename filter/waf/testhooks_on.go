//go:build corazawaf_testhooks

package waf

import (
	"errors"
)

// testHooksEnabled is true in the test build of the module (make test
// builds build/test/libcorazawaf.so with this tag).
const testHooksEnabled = true

func validateTestHooks(h TestHooks) error {
	if h.PanicHeader == "" {
		return errors.New("test_hooks.panic_header: name the request header that selects the step to panic in")
	}
	return nil
}
