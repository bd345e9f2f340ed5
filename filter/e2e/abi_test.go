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
	var verdicts []string
	for _, line := range strings.Split(p.log(t), "\n") {
		if strings.Contains(line, "module ABI version") {
			verdicts = append(verdicts, line)
		}
	}
	if len(verdicts) != 1 || !strings.HasSuffix(strings.TrimSpace(verdicts[0]), "matched.") {
		t.Errorf("want one line saying the ABI version matched; Envoy logged %q", verdicts)
	}
}
