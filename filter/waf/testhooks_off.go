//go:build !corazawaf_testhooks

package waf

import "errors"

// testHooksEnabled is false in release builds: the test_hooks field is
// rejected, so a production module cannot be told to panic.
const testHooksEnabled = false

func validateTestHooks(TestHooks) error {
	return errors.New("test_hooks: only accepted by a module built with the corazawaf_testhooks tag")
}
