// Package linkage reads from a built module file which engine its
// accelerated build links. The Makefile picks the engine by whether
// Hyperscan's headers are installed when it builds, so the file, not the
// source tree, is the witness of what a test or a measurement ran.
package linkage

import (
	"debug/elf"
	"fmt"
	"slices"
	"strings"
)

// The engines of the accelerated build (filter/accel: DefaultEngine).
const (
	// Hyperscan: the build links libhs and hands Hyperscan the expressions
	// it compiles exactly. It still falls back to PureGo on a processor
	// Hyperscan does not support, which the module's summary line says.
	Hyperscan = "hyperscan"
	// PureGo: literal prefilter and RE2, everywhere.
	PureGo = "pure-go"
)

// Linkage is what a module file says of its engine.
type Linkage struct {
	Engine  string // Hyperscan or PureGo
	Library string // the Hyperscan library it needs (e.g. libhs.so.5); "" for PureGo
}

// String is the engine, with the library it needs when there is one, as
// sweep metadata records it: "hyperscan (libhs.so.5)" or "pure-go".
func (l Linkage) String() string {
	if l.Library == "" {
		return l.Engine
	}
	return fmt.Sprintf("%s (%s)", l.Engine, l.Library)
}

// Of reads the shared libraries module names (DT_NEEDED): Hyperscan when
// one is libhs, else PureGo. Only dynamic linking is recognised, the one
// way the Makefile links it (-lhs against Debian's libhyperscan-dev).
func Of(module string) (Linkage, error) {
	f, err := elf.Open(module)
	if err != nil {
		return Linkage{}, fmt.Errorf("reading the engine of %s: %w", module, err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return Linkage{}, fmt.Errorf("reading the libraries %s needs: %w", module, err)
	}
	if i := slices.IndexFunc(libs, isHyperscan); i >= 0 {
		return Linkage{Engine: Hyperscan, Library: libs[i]}, nil
	}
	return Linkage{Engine: PureGo}, nil
}

// isHyperscan matches libhs.so and its versioned names, not libhs_runtime
// (the scan-only library, which cannot compile the databases).
func isHyperscan(lib string) bool {
	return lib == "libhs.so" || strings.HasPrefix(lib, "libhs.so.")
}
