package e2e

import (
	"strings"
	"testing"
)

// TestEnvoyTakesTheModulesABIVersion loads the module and reads Envoy's
// verdict on the ABI version it declares (internal/abi/glue.h): Envoy 1.40
// logs "Dynamic module ABI version v0.2.0 matched." for its own, and loads
// an older one (v0.1.0) with a deprecation warning, which a module built
// for it must not get.
func TestEnvoyTakesTheModulesABIVersion(t *testing.T) {
	p := startProxy(t, proxyOptions{config: `{"directives":["SecRuleEngine On"]}`})
	p.do(t, request{path: "/"})
	verdicts := p.logLines(t, "module ABI version")
	if len(verdicts) != 1 || !strings.HasSuffix(verdicts[0], "matched.") {
		t.Errorf("want one line saying the ABI version matched; Envoy logged %q", verdicts)
	}
}

// TestGoRuntimeGetsAPForEveryCaller starts Envoy with three workers and two
// inspection threads: the module reads the worker count from Envoy at
// program init and sizes the Go runtime for all five callers plus the
// spare P that keeps a worker's P from being taken between hooks.
func TestGoRuntimeGetsAPForEveryCaller(t *testing.T) {
	p := startProxy(t, proxyOptions{
		config:  `{"directives":["SecRuleEngine On"],"off_worker":{"threads":2}}`,
		workers: 3,
	})
	p.do(t, request{path: "/"})
	sized := p.logLines(t, "Go runtime: ")
	want := "Go runtime: 6 Ps for 3 Envoy workers and 2 inspection threads"
	if len(sized) == 0 || sized[len(sized)-1] != want {
		t.Errorf("want the runtime sized last as %q; the module logged %q", want, sized)
	}
}
