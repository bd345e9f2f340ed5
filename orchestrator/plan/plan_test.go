package plan

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfigID(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{FlavorWAF, TierFullCRS, ShapeJSON1K}, "waf/full-crs/json_1k"},
		{Config{FlavorEnvoy, TierNone, ShapeGet}, "envoy/none/get"},
	}
	for _, tt := range tests {
		if got := tt.cfg.ID(); got != tt.want {
			t.Errorf("ID() = %q, want %q", got, tt.want)
		}
		back, err := ParseConfigID(tt.want)
		if err != nil || back != tt.cfg {
			t.Errorf("ParseConfigID(%q) = %+v, %v", tt.want, back, err)
		}
	}
	for _, bad := range []string{"", "waf/full-crs", "waf//get", "a/b/c/d"} {
		if _, err := ParseConfigID(bad); err == nil {
			t.Errorf("ParseConfigID(%q) accepted", bad)
		}
	}
}

func TestDefault(t *testing.T) {
	p := Default()
	if err := p.Validate(); err != nil {
		t.Fatalf("Default() is invalid: %v", err)
	}
	if !reflect.DeepEqual(p.Ladder, []int{1000, 2000, 3000, 4000, 6000, 8000, 10000}) {
		t.Errorf("Ladder = %v", p.Ladder)
	}
	if p.Connections != 64 || p.Rounds != 1 || !p.Confirm || p.MaxLoadgenCPU != 0.70 || p.FloorRPS != 50 {
		t.Errorf("Default() = %+v", p)
	}
	if p.Warmup != 5*time.Second || p.Measure != 20*time.Second || p.Cooldown != 2*time.Second {
		t.Errorf("durations = %s %s %s", p.Warmup, p.Measure, p.Cooldown)
	}
	// direct and envoy once per shape, waf once per tier and shape.
	if n := len(p.Configs()); n != 4+4+3*4 {
		t.Errorf("len(Configs()) = %d, want 20", n)
	}
}

// validateCase is a change to the default plan and what its validation
// must say, every message at once.
type validateCase struct {
	name   string
	mutate func(*Plan)
	want   []string
}

func checkValidateCases(t *testing.T, tests []validateCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Default()
			tt.mutate(&p)
			err := p.Validate()
			if err == nil {
				t.Fatal("Validate() = nil")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	checkValidateCases(t, []validateCase{
		{"unknown flavor", func(p *Plan) { p.Flavors = []string{"wafx"} },
			[]string{`unknown flavor "wafx": use one of direct, envoy, envoy-noop-module, waf, waf-accelerated, nginx-modsecurity`}},
		{"duplicate flavor", func(p *Plan) { p.Flavors = []string{"waf", "waf"} },
			[]string{`flavor "waf" listed twice`}},
		{"no flavors", func(p *Plan) { p.Flavors = nil }, []string{"no flavors: list at least one of"}},
		{"unknown tier", func(p *Plan) { p.Tiers = []string{"full"} }, []string{`unknown tier "full": use one of module-off, headers-only`}},
		{"tier none", func(p *Plan) { p.Tiers = []string{"none", "targeted"} }, []string{`tier "none" is implied`}},
		{"waf without tiers", func(p *Plan) { p.Tiers = nil }, []string{"no tiers"}},
		{"unknown shape", func(p *Plan) { p.Shapes = []string{"xml"} }, []string{`unknown shape "xml"`}},
		{"empty ladder", func(p *Plan) { p.Ladder = nil }, []string{"empty ladder"}},
		{"descending ladder", func(p *Plan) { p.Ladder = []int{1000, 3000, 2000} },
			[]string{"ladder[2] = 2000 is not above ladder[1] = 3000"}},
		{"repeated rate", func(p *Plan) { p.Ladder = []int{1000, 1000} }, []string{"ladder[1] = 1000 is not above"}},
		{"zero rate", func(p *Plan) { p.Ladder = []int{0, 1000} }, []string{"ladder[0] = 0: rates must be positive"}},
		{"no connections", func(p *Plan) { p.Connections = 0 }, []string{"connections = 0"}},
		{"short measure", func(p *Plan) { p.Measure = 500 * time.Millisecond }, []string{"measure = 500ms: use at least 1s"}},
		{"negative warmup", func(p *Plan) { p.Warmup = -time.Second }, []string{"warmup = -1s"}},
		{"negative cooldown", func(p *Plan) { p.Cooldown = -time.Second }, []string{"cooldown = -1s"}},
		{"no rounds", func(p *Plan) { p.Rounds = 0 }, []string{"rounds = 0"}},
		{"cpu budget", func(p *Plan) { p.MaxLoadgenCPU = 70 }, []string{"max_loadgen_cpu = 70"}},
		{"coarse knee", func(p *Plan) { p.KneeResolution = 0.1 }, []string{"knee_resolution = 0.1: use a fraction in [0.005, 0.05]"}},
		{"lateness", func(p *Plan) { p.MaxLoadgenLateness = 0 }, []string{"max_loadgen_lateness = 0"}},
		{"steal", func(p *Plan) { p.MaxCPUSteal = 2 }, []string{"max_cpu_steal = 2"}},
		{"no delay allowed", func(p *Plan) { p.MaxLoadgenDelay = 0 }, []string{"max_loadgen_delay = 0s: use a positive duration"}},
		{"repeated slo", func(p *Plan) { p.SLOs = []time.Duration{time.Millisecond, time.Millisecond} }, []string{"slos: 1ms: use distinct positive durations"}},
		{"unknown slo rule", func(p *Plan) { p.SLORule = "first_run" }, []string{`slo_rule = "first_run": use "every_run"`}},
		{"negative floor", func(p *Plan) { p.FloorRPS = -1 },
			[]string{"floor_rps = -1: set floor_rps between 1 and 999 (below the ladder's first rate 1000), or to 0 to turn the descent below the ladder off"}},
		{"floor at the first rate", func(p *Plan) { p.FloorRPS = 1000 }, []string{"floor_rps = 1000: set floor_rps between 1 and 999"}},
		{"floor above the first rate", func(p *Plan) { p.Ladder, p.FloorRPS = []int{100, 200}, 150 },
			[]string{"floor_rps = 150: set floor_rps between 1 and 99"}},
		{"no floor fits a ladder from 1", func(p *Plan) { p.Ladder, p.Connections, p.FloorRPS = []int{1, 2}, 1, 1 },
			[]string{"floor_rps = 1: set floor_rps to 0 to turn the descent below the ladder off"}},
		{"too few calls per connection at the floor", func(p *Plan) { p.FloorRPS, p.Measure = 1, 5*time.Second },
			[]string{"floor_rps = 1 with measure = 5s schedules 5 calls, fewer than 2 per connection over 4 connections: " +
				"raise floor_rps to at least 2, or lengthen measure to at least 8s"}},
		{"envoy env without a value", func(p *Plan) { p.EnvoyEnv = []string{"GOGC"} }, []string{`envoy_env "GOGC": write NAME=VALUE`}},
		{"envoy env with a bad name", func(p *Plan) { p.EnvoyEnv = []string{"GO GC=1"} }, []string{`envoy_env "GO GC=1": write NAME=VALUE`}},
		{"envoy env set twice", func(p *Plan) { p.EnvoyEnv = []string{"GOGC=1", "GOGC=2"} }, []string{"envoy_env: GOGC set twice"}},
		{"an audit log without a WAF", func(p *Plan) { p.AuditLog, p.Flavors = true, []string{FlavorEnvoy} }, []string{"audit_log: no flavor has a WAF"}},
		{"an unknown protocol", func(p *Plan) { p.Protocol = "h3" }, []string{`protocol "h3": use h1, h2`}},
		{"an audit log of module-off", func(p *Plan) { p.AuditLog, p.Tiers = true, []string{TierModuleOff} }, []string{"audit_log: tier module-off inspects nothing"}},
		{"every problem at once", func(p *Plan) {
			p.Flavors = []string{"wafx"}
			p.Ladder = []int{2000, 1000}
			p.Measure = 0
		}, []string{`unknown flavor "wafx"`, "ladder[1] = 1000", "measure = 0s"}},
	})
}

func TestValidateFloor(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(*Plan)
	}{
		{"descent off", func(p *Plan) { p.FloorRPS = 0 }},
		{"floor just below the ladder", func(p *Plan) { p.FloorRPS = 999 }},
		{"exactly 2 calls per connection", func(p *Plan) { p.FloorRPS, p.Measure = 64, 2*time.Second }},
		{"descent off ignores the calls rule", func(p *Plan) { p.FloorRPS, p.Measure = 0, time.Second }},
	} {
		p := Default()
		tt.mutate(&p)
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestKneeOptions(t *testing.T) {
	p := Default()
	p.Confirm, p.FloorRPS = false, 120
	o := p.KneeOptions()
	if o.Confirm || o.Floor != 120 || o.MinGap != 1 || o.GapFraction != 0.05 || o.MaxInvalidRetries != 3 {
		t.Errorf("KneeOptions() = %+v", o)
	}
}

func TestValidateDirectOnlyNeedsNoTiers(t *testing.T) {
	p := Default()
	p.Flavors, p.Tiers = []string{FlavorDirect, FlavorEnvoy}, nil
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigs(t *testing.T) {
	p := Default()
	p.Flavors = []string{FlavorDirect, FlavorWAF}
	p.Tiers = []string{TierHeadersOnly, TierFullCRS}
	p.Shapes = []string{ShapeGet, ShapeJSON1K}
	want := []Config{
		{"direct", "none", "get"}, {"direct", "none", "json_1k"},
		{"waf", "headers-only", "get"}, {"waf", "headers-only", "json_1k"},
		{"waf", "full-crs", "get"}, {"waf", "full-crs", "json_1k"},
	}
	if got := p.Configs(); !reflect.DeepEqual(got, want) {
		t.Errorf("Configs() = %v\nwant %v", got, want)
	}
}

func TestConfigsForRound(t *testing.T) {
	p := Default()
	p.Flavors = []string{FlavorDirect, FlavorEnvoy, FlavorWAF}
	p.Tiers = []string{TierFullCRS}
	p.Shapes = []string{ShapeGet}
	even := []Config{{"direct", "none", "get"}, {"envoy", "none", "get"}, {"waf", "full-crs", "get"}}
	odd := []Config{{"waf", "full-crs", "get"}, {"envoy", "none", "get"}, {"direct", "none", "get"}}
	for round, want := range [][]Config{even, odd, even, odd} {
		if got := p.ConfigsForRound(round); !reflect.DeepEqual(got, want) {
			t.Errorf("round %d: %v, want %v", round, got, want)
		}
	}
	if p.Flavors[0] != FlavorDirect {
		t.Errorf("ConfigsForRound reordered the plan's flavors: %v", p.Flavors)
	}
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadFile(t *testing.T) {
	path := writeFile(t, `{"flavors": ["envoy", "waf"], "ladder": [500, 1000], "connections": 32,
		"measure": "30s", "confirm": false, "rounds": 3}`)
	p, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Flavors, want.Ladder, want.Connections = []string{"envoy", "waf"}, []int{500, 1000}, 32
	want.Measure, want.Confirm, want.Rounds = 30*time.Second, false, 3
	if !reflect.DeepEqual(p, want) {
		t.Errorf("LoadFile = %+v\nwant %+v", p, want)
	}
}

func TestLoadFileFloor(t *testing.T) {
	for text, want := range map[string]int{
		`{}`:                 50, // the default
		`{"floor_rps": 0}`:   0,  // explicitly off, not the default
		`{"floor_rps": 200}`: 200,
	} {
		p, err := LoadFile(writeFile(t, text))
		if err != nil || p.FloorRPS != want {
			t.Errorf("%s: floor %d, err %v; want %d", text, p.FloorRPS, err, want)
		}
	}
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"unknown field", `{"ladders": [1000]}`, `unknown field "ladders"`},
		{"bad duration", `{"warmup": "5"}`, `warmup: time: missing unit`},
		{"invalid plan", `{"flavors": ["wafx"]}`, `unknown flavor "wafx"`},
		{"not json", `flavors: [waf]`, "parse plan"},
		{"default floor above a low ladder", `{"ladder": [40, 80], "connections": 8}`, "floor_rps = 50: set floor_rps between 1 and 39"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadFile(writeFile(t, tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing file accepted")
	}
}

func TestPlanJSONRoundTrip(t *testing.T) {
	p := Default()
	p.Rounds, p.Confirm, p.SLOs, p.FloorRPS = 3, false, []time.Duration{2500 * time.Microsecond}, 120
	p.EnvoyEnv = []string{"GOGC=400", "GODEBUG=gctrace=1,madvdontneed=1"}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"warmup":"5s"`) || !strings.Contains(string(data), `"floor_rps":120`) {
		t.Errorf("durations are not readable strings: %s", data)
	}
	var back Plan
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, p) {
		t.Errorf("round trip = %+v\nwant %+v", back, p)
	}
}

// A plan without an Envoy environment writes no envoy_env, so the sweeps
// made before the field keep their identity (a digest of the plan's JSON).
func TestPlanWithoutEnvoyEnvWritesNone(t *testing.T) {
	data, err := json.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "envoy_env") {
		t.Errorf("default plan writes envoy_env: %s", data)
	}
}

// Envoy's Go runtime knobs come from the plan alone: each is blanked
// first (the runtime reads an empty value as unset), then the plan's
// entries follow and win, as a process's later entry does.
func TestEnvoyEnvironSetsTheRuntimeKnobsOnlyFromThePlan(t *testing.T) {
	p := Default()
	if got, want := p.EnvoyEnviron(), []string{"GOGC=", "GOMEMLIMIT=", "GODEBUG=", "GOMAXPROCS="}; !reflect.DeepEqual(got, want) {
		t.Errorf("EnvoyEnviron() = %q, want %q", got, want)
	}
	p.EnvoyEnv = []string{"GOGC=400"}
	got := p.EnvoyEnviron()
	if got[len(got)-1] != "GOGC=400" || slices.Index(got, "GOGC=") > slices.Index(got, "GOGC=400") {
		t.Errorf("EnvoyEnviron() = %q: the plan's GOGC must come after the blank one", got)
	}
}

func TestConnectionsForGivesEachConnectionFiftyCalls(t *testing.T) {
	p := Default()
	p.Measure = 20 * time.Second
	tests := []struct{ rate, want int }{
		{rate: 10000, want: 64}, // 4,000 would be needed: capped at Plan.Connections
		{rate: 160, want: 64},   // 3,200 calls / 50
		{rate: 80, want: 32},    // 1,600 calls / 50
		{rate: 5, want: 4},      // 100 calls: MinConnections
	}
	for _, tc := range tests {
		if got := p.ConnectionsFor(tc.rate); got != tc.want {
			t.Errorf("ConnectionsFor(%d) = %d, want %d", tc.rate, got, tc.want)
		}
		if calls := float64(tc.rate) * p.Measure.Seconds() / float64(p.ConnectionsFor(tc.rate)); tc.want < 64 && tc.want > MinConnections && calls < CallsPerConnection {
			t.Errorf("at %d RPS each connection sends %.0f calls", tc.rate, calls)
		}
	}
	p.Connections = 2
	if got := p.ConnectionsFor(5); got != 2 {
		t.Errorf("with connections = 2, ConnectionsFor(5) = %d: the plan's maximum wins", got)
	}
}

func TestAudits(t *testing.T) {
	tests := []struct {
		name     string
		auditLog bool
		cfg      Config
		want     bool
	}{
		{"the audit tier", false, Config{FlavorWAF, TierFullCRSAudit, ShapeGet}, true},
		{"another tier", false, Config{FlavorWAF, TierFullCRS, ShapeGet}, false},
		{"another tier, the plan's audit log", true, Config{FlavorWAF, TierHeadersOnly, ShapeGet}, true},
		{"nginx, the plan's audit log", true, Config{FlavorNginxModSecurity, TierFullCRS, ShapeGet}, true},
		{"a flavor without a WAF", true, Config{FlavorEnvoy, TierNone, ShapeGet}, false},
		{"module-off", true, Config{FlavorWAF, TierModuleOff, ShapeGet}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Default()
			p.AuditLog = tc.auditLog
			if got := p.Audits(tc.cfg); got != tc.want {
				t.Errorf("Audits(%s) = %v, want %v", tc.cfg.ID(), got, tc.want)
			}
		})
	}
}

// The audit log is part of the plan file, and so of the sweep's identity;
// a plan without it writes nothing, so the sweeps before it keep theirs.
func TestAuditLogRoundTripsAndIsOmittedWhenOff(t *testing.T) {
	data, err := json.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "audit_log") {
		t.Errorf("default plan writes audit_log: %s", data)
	}
	p := Default()
	p.AuditLog = true
	if data, err = json.Marshal(p); err != nil {
		t.Fatal(err)
	}
	back := Default()
	if err := json.Unmarshal(data, &back); err != nil || !back.AuditLog {
		t.Errorf("read back %v (%v) from %s", back.AuditLog, err, data)
	}
}

// The transport is part of the plan file, and so of the sweep's identity;
// HTTP/1.1 in clear writes nothing, so the sweeps before it keep theirs,
// and a plan file without it reads as HTTP/1.1 in clear.
func TestTransportRoundTripsAndIsOmittedWhenDefault(t *testing.T) {
	data, err := json.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "protocol") || strings.Contains(string(data), "tls") {
		t.Errorf("default plan writes its transport: %s", data)
	}
	back := Plan{}
	if err := json.Unmarshal(data, &back); err != nil || back.Transport() != (Transport{Protocol: ProtocolH1}) {
		t.Errorf("read back %+v (%v) from %s", back.Transport(), err, data)
	}
	p := Default()
	p.Protocol, p.TLS = ProtocolH2, true
	if data, err = json.Marshal(p); err != nil {
		t.Fatal(err)
	}
	back = Default()
	if err := json.Unmarshal(data, &back); err != nil || back.Transport() != p.Transport() {
		t.Errorf("read back %+v (%v) from %s", back.Transport(), err, data)
	}
}

// A sweep's metadata from before SLORule has none, and its SLO knees were
// decided by the last run at the bound: it reads back as SLOLastRun and
// writes no field, so that its identity and its replay stay as they were.
// A plan file without the field gets the default, SLOEveryRun.
func TestSLORuleOfOldSweepsAndOfPlanFiles(t *testing.T) {
	p := Default()
	p.SLORule = SLOLastRun
	old, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(old), "slo_rule") {
		t.Errorf("a last_run plan writes its rule: %s", old)
	}
	var metadata Plan // how dataset.ReadMetadata decodes it
	if err := json.Unmarshal(old, &metadata); err != nil || metadata.SLORule != SLOLastRun {
		t.Errorf("old sweep's plan reads back with rule %q (%v), want last_run", metadata.SLORule, err)
	}
	fromFile, err := LoadFile(writeFile(t, `{"rounds": 2}`))
	if err != nil || fromFile.SLORule != SLOEveryRun {
		t.Errorf("plan file without slo_rule: rule %q (%v), want every_run", fromFile.SLORule, err)
	}
	current, err := json.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	var back Plan
	if err := json.Unmarshal(current, &back); err != nil || back.SLORule != SLOEveryRun || !strings.Contains(string(current), `"slo_rule":"every_run"`) {
		t.Errorf("default plan %s reads back with rule %q (%v)", current, back.SLORule, err)
	}
}

func TestTransportNames(t *testing.T) {
	for _, tc := range []struct {
		t                Transport
		name             string
		http2, isDefault bool
	}{
		{Transport{}, "h1", false, true},
		{Transport{Protocol: ProtocolH1}, "h1", false, true},
		{Transport{Protocol: ProtocolH2}, "h2", true, false},
		{Transport{Protocol: ProtocolH1, TLS: true}, "h1+tls", false, false},
		{Transport{Protocol: ProtocolH2, TLS: true}, "h2+tls", true, false},
	} {
		if tc.t.Name() != tc.name || tc.t.HTTP2() != tc.http2 || tc.t.IsDefault() != tc.isDefault {
			t.Errorf("%+v: %s %v %v, want %s %v %v", tc.t, tc.t.Name(), tc.t.HTTP2(), tc.t.IsDefault(), tc.name, tc.http2, tc.isDefault)
		}
	}
}
