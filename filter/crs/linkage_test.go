package crs

import (
	"os"
	"runtime"
	"testing"

	"github.com/wafsweep/wafsweep/filter/accel/linkage"
)

// hyperscanHeader is what the Makefile looks for to build the accelerated
// module with Hyperscan (make hyperscan-dev installs it).
const hyperscanHeader = "/usr/include/hs/hs.h"

// Where Hyperscan's headers are installed, the accelerated module must link
// it: a module built pure-Go before they were installed, and not rebuilt
// after, would quietly test and ship the slower engine.
func TestAcceleratedModuleLinksHyperscanWhereItsHeadersAre(t *testing.T) {
	if _, err := os.Stat(hyperscanHeader); err != nil || runtime.GOARCH != "amd64" {
		t.Skipf("no %s here (or not x86-64): the accelerated build is pure Go", hyperscanHeader)
	}
	module := os.Getenv(accelModuleEnv)
	if module == "" {
		requireOrSkip(t, "$%s is not set", accelModuleEnv)
	}
	l, err := linkage.Of(module)
	if err != nil {
		t.Fatal(err)
	}
	if l.Engine != linkage.Hyperscan {
		t.Errorf("%s is %s, though %s exists: rebuild it (make build)", module, l, hyperscanHeader)
	}
}
