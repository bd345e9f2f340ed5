package main

import (
	"cmp"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/modulecost"
	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor/moduleflavortest"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/target"
)

func TestFlagsBuildThePlan(t *testing.T) {
	f, _, err := parseSweepFlags([]string{"--profile", "full", "--flavors", "envoy,waf", "--tiers", "full-crs",
		"--shapes", "json_10k", "--ladder", "100,200", "--floor", "20", "--measure", "5s", "--connections", "8", "--rounds", "3"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.buildPlan()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Flavors, ",") != "envoy,waf" || p.Tiers[0] != "full-crs" || p.Shapes[0] != "json_10k" ||
		p.Ladder[1] != 200 || p.FloorRPS != 20 || p.Measure != 5*time.Second || p.Connections != 8 || p.Rounds != 3 {
		t.Fatalf("flags not applied: %+v", p)
	}
	short, _, _ := parseSweepFlags(nil, io.Discard)
	sp, err := short.buildPlan()
	if err != nil || len(sp.Shapes) != 2 || sp.Measure != 4*time.Second || len(sp.Tiers) != 1 || sp.Tiers[0] != plan.TierFullCRS ||
		sp.FloorRPS != 20 || len(sp.SLOs) != 1 {
		t.Fatalf("short profile: %+v %v", sp, err)
	}
	for _, tt := range []struct {
		args        []string
		wantFlavors string
	}{
		{nil, "direct,envoy,waf,waf-accelerated"},
		{[]string{"--profile", "full"}, "direct,envoy,waf,waf-accelerated"},
		{[]string{"--target", "kube"}, "direct,envoy,waf,waf-accelerated"},
		{[]string{"--profile", "module-cost"}, "envoy,envoy-noop-module,waf"},
		{[]string{"--profile", "module-cost-full-crs"}, "envoy,waf,waf-accelerated"},
		{[]string{"--flavors", "waf"}, "waf"},
	} {
		f, _, err := parseSweepFlags(tt.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.buildPlan()
		if got := strings.Join(p.Flavors, ","); err != nil || got != tt.wantFlavors {
			t.Errorf("%v: flavors %s, %v; want %s", tt.args, got, err, tt.wantFlavors)
		}
	}
}

func TestBadFlagsFailBeforeAnythingStarts(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--flavors", "wafx"}, `unknown flavor "wafx"`},
		{[]string{"--ladder", "300,x"}, `"x" is not a rate`},
		{[]string{"--ladder", "300,200"}, "ascending"},
		{[]string{"--profile", "huge"}, "use short, full, reference, module-cost or module-cost-full-crs"},
		{[]string{"--proxy-cpus", "a-b"}, "--proxy-cpus"},
		{[]string{"--target", "mars"}, "--target"},
		{[]string{"--slo", "50ms,fast"}, "--slo"},
		{[]string{"--target", "kind", "--flavors", "envoy,nginx-modsecurity"}, "flavors nginx-modsecurity are not available on the Kubernetes targets"},
		{[]string{"--target", "kind", "--flavors", "envoy,envoy-noop-module"}, "flavors envoy-noop-module are not available on the Kubernetes targets"},
		{[]string{"--target", "kind", "--flavors", "waf-accelerated", "--module", "/nonexistent/libcorazawaf.so"}, "--module's accelerated build (for waf-accelerated)"},
		{[]string{"--slo", "50ms,50ms"}, "slos: 50ms: use distinct positive durations"},
		{[]string{"--target", "kind", "--backend-cpu-per-request", "1ms"}, "the calibration backend runs on the local target only"},
		{[]string{"--backend-cpu-per-request", "1ms", "--backend-cpus", "0", "--loadgen-cpus", "0"}, "a calibration backend shares CPUs 0 with the load generator"},
		{[]string{"--envoy-env", "GOGC"}, `envoy_env "GOGC": write NAME=VALUE`},
		{[]string{"--envoy-env", "GOGC=100", "--envoy-env", "GOGC=400"}, "envoy_env: GOGC set twice"},
		{[]string{"--audit-log", "--flavors", "direct,envoy"}, "audit_log: no flavor has a WAF to write it"},
		{[]string{"--audit-log", "--flavors", "waf", "--tiers", "module-off,headers-only"}, "audit_log: tier module-off inspects nothing"},
		{[]string{"--protocol", "h3"}, `protocol "h3": use h1, h2`},
		{[]string{"--attack-share", "a lot"}, `--attack-share: "a lot" is not a percentage`},
		{[]string{"--attack-share", "60%"}, "attack share 60% is out of range"},
		{[]string{"--attack-share", "-1%"}, "attack share -1% is out of range"},
		{[]string{"--shapes", "get,mixfile:/nonexistent.mix"}, "--shapes: mix file"},
		{[]string{"--module-flavor", "peer"}, `--module-flavor "peer": write NAME=FILE`},
		{[]string{"--module-flavor", "peer=/nonexistent/peer.json"}, "module flavor peer (/nonexistent/peer.json)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			f, _, err := parseSweepFlags(tt.args, io.Discard)
			if err == nil {
				_, err = f.sweepOptions()
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
	if _, _, err := parseSweepFlags([]string{"stray"}, io.Discard); err == nil {
		t.Fatal("stray arguments must be refused")
	}
}

// sweepID is the default directory name sweepIdentity gives.
func sweepID(target string, p plan.Plan, identity ...any) (string, error) {
	_, id, err := sweepIdentity(target, p, identity...)
	return id, err
}

func TestSweepIDIsStableForTheSamePlan(t *testing.T) {
	a, _ := sweepID("local", plan.Default())
	b, _ := sweepID("local", plan.Default())
	other := plan.Default()
	other.Rounds = 2
	c, _ := sweepID("local", other)
	if a != b || a == c || !strings.HasPrefix(a, "local-") {
		t.Fatalf("ids %s %s %s", a, b, c)
	}
}

// The same plan on another build, other CPUs or another cluster is another
// sweep: resuming would mix two of them in one dataset.
func TestSweepIDCoversWhatIsMeasuredAndWhere(t *testing.T) {
	build := dataset.Versions{Module: "sha256:aaaa", Envoy: "1.40.0"}
	cpus := target.Description{CoreAssignment: map[string]string{"proxy": "1", "loadgen": "0"}}
	base, _ := sweepID("local", plan.Default(), cpus, build.Build())
	rebuilt := build
	rebuilt.Module = "sha256:bbbb"
	otherCPUs := target.Description{CoreAssignment: map[string]string{"proxy": "0", "loadgen": "1"}}
	recommitted := build
	recommitted.WafsweepCommit = "abc123"
	tuned := plan.Default()
	tuned.EnvoyEnv = []string{"GOGC=400"}
	audited := plan.Default()
	audited.AuditLog = true
	tests := []struct {
		name string
		id   func() (string, error)
		same bool
	}{
		{"a module rebuild", func() (string, error) { return sweepID("local", plan.Default(), cpus, rebuilt.Build()) }, false},
		{"another CPU assignment", func() (string, error) { return sweepID("local", plan.Default(), otherCPUs, build.Build()) }, false},
		{"another target", func() (string, error) { return sweepID("kind", plan.Default(), cpus, build.Build()) }, false},
		{"a wafsweep commit alone", func() (string, error) { return sweepID("local", plan.Default(), cpus, recommitted.Build()) }, true},
		{"Envoy's environment", func() (string, error) { return sweepID("local", tuned, cpus, build.Build()) }, false},
		{"the audit log", func() (string, error) { return sweepID("local", audited, cpus, build.Build()) }, false},
	}
	for _, tc := range tests {
		id, err := tc.id()
		if err != nil {
			t.Fatal(err)
		}
		if (id == base) != tc.same {
			t.Errorf("%s: id %s vs %s, same = %v, want %v", tc.name, id, base, id == base, tc.same)
		}
	}
}

// Every flag of `wafsweep sweep` is in the orchestrator's reference.
func TestEveryFlagIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, fs, err := parseSweepFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(string(doc), "`--"+f.Name+"`") {
			t.Errorf("--%s is not in orchestrator/README.md", f.Name)
		}
	})
}

// Every command of the usage text is in the orchestrator's reference, as
// it is run ("`wafsweep compare ...").
func TestEveryCommandIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	commands := usageCommands(usage)
	if len(commands) < 5 {
		t.Fatalf("read %d commands off the usage text: %q", len(commands), commands)
	}
	for _, c := range commands {
		if !strings.Contains(string(doc), "`wafsweep "+c) {
			t.Errorf("wafsweep %s is not in orchestrator/README.md", c)
		}
	}
}

// usageCommands are the names the usage text lists under "commands:", each
// the first word of a line indented by two spaces.
func usageCommands(text string) []string {
	_, list, _ := strings.Cut(text, "commands:\n")
	var out []string
	for _, line := range strings.Split(list, "\n") {
		if name, ok := strings.CutPrefix(line, "  "); ok && name != "" && name[0] != ' ' {
			out = append(out, strings.Fields(name)[0])
		}
	}
	return out
}

// A mix file and an attack share reach the plan as what they mean: the
// mix itself (not the file's path) and the share in percent.
func TestMixFileAndAttackShareFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "storefront.mix")
	if err := os.WriteFile(path, []byte("get 60\njson_1k 30\njson_10k 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _, err := parseSweepFlags([]string{"--shapes", "get,mixfile:" + path, "--attack-share", "0.5%"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.buildPlan()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Shapes, []string{"get", "mix:get=60,json_1k=30,json_10k=10"}) || p.AttackSharePct != 0.5 {
		t.Errorf("shapes %q, attack share %v%%", p.Shapes, p.AttackSharePct)
	}
}

func TestSplitShapesKeepsMixesWhole(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"get,json_1k", []string{"get", "json_1k"}},
		{"get,mix:get=60,json_1k=30,json_10k=10", []string{"get", "mix:get=60,json_1k=30,json_10k=10"}},
		{"mix:get=1,json_1k=1,mix:get=3,json_10k=1,json_50k", []string{"mix:get=1,json_1k=1", "mix:get=3,json_10k=1", "json_50k"}},
		{"json_1k=30,get", []string{"json_1k=30", "get"}},
	} {
		if got := splitShapes(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("splitShapes(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The matrix profiles measure its slowest configuration instead of
// reporting it censored below: their descent floor is at most what one
// core passes of the costliest row of the committed engine benchmark
// (Envoy only adds to that cost, so the true capacity is no higher).
func TestMatrixProfilesReachTheSlowestConfiguration(t *testing.T) {
	engine, err := modulecost.ReadEngineCSV("../../../results/bench/engine.csv")
	if err != nil {
		t.Fatal(err)
	}
	slowest := slices.MaxFunc(engine, func(a, b modulecost.EngineCost) int { return cmp.Compare(a.CPUNs, b.CPUNs) })
	capacity := int(float64(time.Second) / slowest.CPUNs)
	for _, name := range []string{"full", "reference"} {
		p, err := profilePlan(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if p.FloorRPS < 1 || p.FloorRPS > capacity {
			t.Errorf("%s profile's floor is %d RPS; %s %s %s passes about %d on one core", name, p.FloorRPS,
				slowest.Flavor, slowest.Tier, slowest.Shape, capacity)
		}
	}
}

// --module-flavor NAME=FILE declares a flavor for any module: added to the
// profile's flavors, or swept where --flavors names it; its library's
// digest is in the sweep's identity, so a rebuilt library is another
// sweep; the Kubernetes targets refuse it by name.
func TestModuleFlavorFlag(t *testing.T) {
	dir := t.TempDir()
	moduleflavortest.BuildLibrary(t, dir, "libpeer.so")
	spec := filepath.Join(dir, "peer.json")
	if err := os.WriteFile(spec, []byte(`{"library": "libpeer.so", "module_name": "composer", "filter_name": "coraza-waf",
		"config": {"directives": ["Include ${TIER_FILE}"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	planOf := func(args ...string) plan.Plan {
		t.Helper()
		f, _, err := parseSweepFlags(args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.buildPlan()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := planOf("--module-flavor", "peer="+spec)
	if got := strings.Join(p.Flavors, ","); got != "direct,envoy,waf,waf-accelerated,peer" {
		t.Errorf("flavors %s: want the profile's and peer", got)
	}
	if s, ok := p.Module("peer"); !ok || s.LibraryPath != filepath.Join(dir, "libpeer.so") {
		t.Errorf("peer's spec %+v, %v", s, ok)
	}
	if got := strings.Join(planOf("--module-flavor", "peer="+spec, "--flavors", "envoy,peer").Flavors, ","); got != "envoy,peer" {
		t.Errorf("--flavors envoy,peer: flavors %s", got)
	}
	before, _, err := sweepIdentity("local", p)
	if err != nil {
		t.Fatal(err)
	}
	moduleflavortest.BuildLibrary(t, dir, "libpeer.so", append(moduleflavor.RequiredExports(), "rebuilt")...)
	after, _, err := sweepIdentity("local", planOf("--module-flavor", "peer="+spec))
	if err != nil || after == before {
		t.Errorf("a rebuilt library keeps the sweep's identity %s (%v)", after, err)
	}
	f, _, err := parseSweepFlags([]string{"--target", "kind", "--module-flavor", "peer=" + spec}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.sweepOptions(); err == nil || !strings.Contains(err.Error(), "flavors peer are not available on the Kubernetes targets") {
		t.Errorf("kind with a module flavor: %v", err)
	}
}
