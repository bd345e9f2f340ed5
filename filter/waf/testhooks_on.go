//go:build corazawaf_testhooks

package waf

import (
	"fmt"
	"slices"
)

// testHooksEnabled is true in the test build of the module (make test
// builds build/test/libcorazawaf.so with this tag).
const testHooksEnabled = true

func validateTestHooks(h TestHooks) error {
	if h.PanicIn != "" && !slices.Contains(PanicSteps, h.PanicIn) {
		return fmt.Errorf("test_hooks.panic_in %q: use one of %v", h.PanicIn, PanicSteps)
	}
	return nil
}
