// Package moduleflavortest builds the files the tests of module flavors
// read: shared libraries that export what an Envoy dynamic module does,
// or less.
package moduleflavortest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
)

// BuildLibrary compiles, into dir, a shared library named name defining
// the functions funcs (none: those of an Envoy dynamic module with an HTTP
// filter), so that a check of its exports reads a real ELF file. The
// bodies do nothing: Envoy is never to load it.
func BuildLibrary(t testing.TB, dir, name string, funcs ...string) string {
	t.Helper()
	if len(funcs) == 0 {
		funcs = moduleflavor.RequiredExports()
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatalf("a C compiler is needed to build test libraries: %v", err)
	}
	var src strings.Builder
	src.WriteString("int wafsweep_test_marker(void) { return 1; }\n")
	for _, f := range funcs {
		src.WriteString("void " + f + "(void) {}\n")
	}
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	if msg, err := exec.Command(cc, "-shared", "-fPIC", "-o", out, c).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, msg)
	}
	return out
}

// Env names another module for the detection tests (the evasion matrix,
// the CRS regression suite) to run against, as a sweep's module flavor:
// NAME=FILE, FILE its spec. Unset, they run against corazawaf's builds;
// `make detect-flavor` sets it.
const Env = "WAFSWEEP_MODULE_FLAVOR"

// FromEnv is the module flavor Env names, if any.
func FromEnv(t testing.TB) (moduleflavor.Spec, bool) {
	t.Helper()
	arg := os.Getenv(Env)
	if arg == "" {
		return moduleflavor.Spec{}, false
	}
	name, file, ok := strings.Cut(arg, "=")
	if !ok {
		t.Fatalf("%s=%q: write NAME=FILE", Env, arg)
	}
	spec, err := moduleflavor.Load(name, file)
	if err != nil {
		t.Fatal(err)
	}
	return spec, true
}

// Config is the filter config that gives spec's module the directives,
// the way its spec gives it a tier: as the rule file ${TIER_FILE} names.
func Config(t testing.TB, spec moduleflavor.Spec, directives []string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "rules.conf")
	if err := os.WriteFile(file, []byte(strings.Join(directives, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config, err := spec.FilterConfig(moduleflavor.Values{Tier: "test", TierFile: file, Rulesets: filepath.Dir(file)})
	if err != nil {
		t.Fatal(err)
	}
	return config
}
