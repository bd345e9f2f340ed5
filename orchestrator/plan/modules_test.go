package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
)

// peerSpec is a module flavor's spec as moduleflavor.Load makes it.
func peerSpec(name string) moduleflavor.Spec {
	return moduleflavor.Spec{Name: name, LibraryPath: "/peers/libcomposer.so", LibraryFile: "libcomposer.so",
		LibrarySHA256: strings.Repeat("ab", 32), ModuleName: "composer", FilterName: "coraza-waf",
		Config: json.RawMessage(`{"directives":["Include ${TIER_FILE}"]}`), Env: []string{"GODEBUG=cgocheck=0"}}
}

func withPeer(p *Plan) {
	p.Modules = []moduleflavor.Spec{peerSpec("peer")}
	p.Flavors = append(p.Flavors, "peer")
}

func TestModuleFlavorsAreWAFsOfThePlan(t *testing.T) {
	p := Default()
	withPeer(&p)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if !HasWAF("peer") || !RunsEnvoy("peer") || !LoadsModule("peer") || IsBuiltIn("peer") {
		t.Error("a module flavor is a WAF on Envoy that loads a module")
	}
	if HasWAF(FlavorEnvoy) || LoadsModule(FlavorDirect) || !IsBuiltIn(FlavorEnvoy) {
		t.Error("the built-in flavors keep their classes")
	}
	if s, ok := p.Module("peer"); !ok || s.FilterName != "coraza-waf" {
		t.Errorf("Module(peer) = %+v, %v", s, ok)
	}
	if _, ok := p.Module(FlavorWAF); ok {
		t.Error("a built-in flavor has no spec")
	}
	var tiers []string
	for _, c := range p.Configs() {
		if c.Flavor == "peer" && c.Shape == ShapeGet {
			tiers = append(tiers, c.Tier)
		}
	}
	if !slices.Equal(tiers, p.Tiers) {
		t.Errorf("peer's GET configurations have tiers %v, want the plan's %v", tiers, p.Tiers)
	}
}

func TestValidateModuleFlavors(t *testing.T) {
	checkValidateCases(t, []validateCase{
		{"undeclared", func(p *Plan) { p.Flavors = append(p.Flavors, "peer") }, []string{`unknown flavor "peer"`}},
		{"declared, not swept", func(p *Plan) { p.Modules = []moduleflavor.Spec{peerSpec("peer")} },
			[]string{"module flavor peer is declared but not swept: add it to flavors"}},
		{"a built-in's name", func(p *Plan) { p.Modules = []moduleflavor.Spec{peerSpec(FlavorWAF)} },
			[]string{"module flavor waf: waf is a built-in flavor"}},
		{"declared twice", func(p *Plan) { withPeer(p); p.Modules = append(p.Modules, peerSpec("peer")) },
			[]string{"module flavor peer declared twice"}},
		{"no library path (a plan read back)", func(p *Plan) { withPeer(p); p.Modules[0].LibraryPath = "" },
			[]string{"module flavor peer: its library's path is unknown: name its spec with --module-flavor peer=FILE"}},
		{"module-off without its config", func(p *Plan) { withPeer(p); p.Tiers = []string{TierModuleOff} },
			[]string{"module flavor peer has no config for tier module-off"}},
		{"an audit log", func(p *Plan) { withPeer(p); p.AuditLog = true },
			[]string{"module flavor peer cannot be told where to write an audit log"}},
		{"the audit tier", func(p *Plan) { withPeer(p); p.Tiers = []string{TierFullCRSAudit} },
			[]string{"module flavor peer cannot be told where to write an audit log"}},
		{"env the plan sets too", func(p *Plan) { withPeer(p); p.EnvoyEnv = []string{"GODEBUG=gctrace=1"} },
			[]string{"module flavor peer sets GODEBUG, which envoy_env sets too"}},
	})
	p := Default()
	withPeer(&p)
	p.Tiers = []string{TierModuleOff}
	p.Modules[0].TierConfigs = map[string]json.RawMessage{TierModuleOff: json.RawMessage(`{"directives":[]}`)}
	if err := p.Validate(); err != nil {
		t.Errorf("module-off with its config: %v", err)
	}
}

// A plan's module flavors are part of its file form, so of the sweep's
// identity (the library's digest, not its path), and a plan without any
// writes none, keeping the identity of the sweeps before them.
func TestModuleFlavorsRoundTrip(t *testing.T) {
	p := Default()
	withPeer(&p)
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "/peers/") || !strings.Contains(string(b), `"library_sha256":"abab`) {
		t.Errorf("file form %s: want the digest, not the path", b)
	}
	var back Plan
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Modules) != 1 || back.Modules[0].LibrarySHA256 != p.Modules[0].LibrarySHA256 || back.Modules[0].LibraryPath != "" {
		t.Errorf("read back %+v", back.Modules)
	}
	plain, err := json.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), "module_flavors") {
		t.Errorf("a plan without module flavors writes the field: %s", plain)
	}
}
