package crs

import (
	"debug/elf"
	"os"
	"runtime"
	"strings"
	"testing"
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
	f, err := elf.Open(module)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range libs {
		if strings.HasPrefix(lib, "libhs.so") {
			return
		}
	}
	t.Errorf("%s needs %v but not libhs.so, though %s exists: rebuild it (make build)", module, libs, hyperscanHeader)
}
