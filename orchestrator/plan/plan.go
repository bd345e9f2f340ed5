package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/knee"
	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
)

// Plan is what a sweep measures and how.
type Plan struct {
	Flavors []string
	Tiers   []string // applied to WAF flavors only
	Shapes  []string
	Ladder  []int // target rates in requests per second, ascending
	// FloorRPS is the lowest rate the knee search descends to when the
	// bottom of the ladder fails (knee.Options.Floor): it halves the rate
	// down to FloorRPS until one passes, so a slow configuration gets a knee
	// instead of "< bottom". 0 turns the descent off (the notes' definition);
	// otherwise it must be below Ladder[0].
	FloorRPS int

	// Connections is the most keep-alive connections a step uses; see
	// ConnectionsFor.
	Connections int
	Warmup      time.Duration
	Measure     time.Duration
	Cooldown    time.Duration
	Rounds      int  // repeats of the whole sweep, in alternating flavor order
	Confirm     bool // re-run the knee before accepting it

	// MaxLoadgenCPU is the fraction of its CPU budget the load generator may
	// use before a step is declared invalid.
	MaxLoadgenCPU float64
	// MaxLoadgenLateness is the share of an SLO step's objective that the
	// load generator's own lateness (its p99, on free connections) may be
	// before the step is invalid: beyond it, whether the p99 meets the
	// objective is the instrument's doing, not the proxy's.
	MaxLoadgenLateness float64
	// MaxLoadgenDelay is the load generator's own lateness (its p99) over
	// which any step, a capacity step too, is invalid: the load generator
	// is not keeping its schedule at all. (A late send still lands in a
	// capacity step's window, so below it lateness does not matter there.)
	MaxLoadgenDelay time.Duration
	// MaxCPUSteal is the share of a CPU the hypervisor may take from the
	// measured CPUs over a window (the steal column of /proc/stat) before
	// the step is invalid: the measured process then ran slower for
	// reasons not its own.
	MaxCPUSteal float64
	// KneeResolution is the bisection's gap, a fraction of the highest
	// passing rate: at most 0.05 (5%), at every rate.
	KneeResolution float64
	// SLOs are the p99 objectives whose highest sustainable rate each
	// configuration is searched for (see dataset.SLOSearches); none turns
	// the SLO searches off.
	SLOs []time.Duration
	// SLORule is how an objective is decided met at its bound without a
	// search of its own (see dataset.SLOSearches).
	SLORule SLORule
	// EnvoyEnv is Envoy's environment beyond what every sweep gives it,
	// KEY=VALUE each: the module's Go runtime knobs (GOGC, GOMEMLIMIT,
	// GODEBUG, GOMAXPROCS) are set only from here (see EnvoyEnviron).
	EnvoyEnv []string
	// AuditLog makes every WAF configuration write its audit log, JSON, of
	// every transaction, into its run directory (as tier full-crs-audit
	// does): Coraza's for the module, ModSecurity's for nginx.
	AuditLog bool
	// Protocol and TLS are how the load generator reaches the proxy (see
	// Transport): the same for every configuration of the sweep.
	Protocol string
	TLS      bool
	// AttackSharePct is the share of each step's rate, in percent, sent as
	// the attacks of each configuration's tier (see AttackShare); 0 sends
	// benign traffic only.
	AttackSharePct float64
	// Modules are the plan's module flavors: any Envoy dynamic module, by
	// its spec (package moduleflavor), swept under its name like a
	// built-in flavor.
	Modules []moduleflavor.Spec
}

// Default is the reference methodology of the notes.
func Default() Plan {
	return Plan{
		Flavors:            []string{FlavorDirect, FlavorEnvoy, FlavorWAF},
		Tiers:              []string{TierHeadersOnly, TierTargeted, TierFullCRS},
		Shapes:             []string{ShapeGet, ShapeJSON1K, ShapeJSON10K, ShapeJSON50K},
		Ladder:             []int{1000, 2000, 3000, 4000, 6000, 8000, 10000},
		FloorRPS:           50,
		Connections:        64,
		Warmup:             5 * time.Second,
		Measure:            20 * time.Second,
		Cooldown:           2 * time.Second,
		Rounds:             1,
		Confirm:            true,
		MaxLoadgenCPU:      0.70,
		MaxLoadgenLateness: 0.25,
		MaxLoadgenDelay:    10 * time.Millisecond,
		MaxCPUSteal:        0.02,
		KneeResolution:     0.05,
		SLOs:               []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 250 * time.Millisecond},
		SLORule:            SLOEveryRun,
		Protocol:           ProtocolH1,
	}
}

// planJSON is the file form of a Plan: durations are Go duration strings
// ("5s", "1m30s") so plan files stay readable.
type planJSON struct {
	Flavors            []string `json:"flavors"`
	Tiers              []string `json:"tiers"`
	Shapes             []string `json:"shapes"`
	Ladder             []int    `json:"ladder"`
	FloorRPS           int      `json:"floor_rps"`
	Connections        int      `json:"connections"`
	Warmup             string   `json:"warmup"`
	Measure            string   `json:"measure"`
	Cooldown           string   `json:"cooldown"`
	Rounds             int      `json:"rounds"`
	Confirm            bool     `json:"confirm"`
	MaxLoadgenCPU      float64  `json:"max_loadgen_cpu"`
	MaxLoadgenLateness float64  `json:"max_loadgen_lateness"`
	MaxLoadgenDelay    string   `json:"max_loadgen_delay"`
	MaxCPUSteal        float64  `json:"max_cpu_steal"`
	KneeResolution     float64  `json:"knee_resolution"`
	// RetiredP99SLO was the objective of the latency knee that the SLO
	// knees (slos) replaced. Metadata of earlier sweeps carries it, so it
	// is read and ignored there; LoadFile refuses it in a plan file.
	RetiredP99SLO *string  `json:"p99_slo,omitempty"`
	SLOs          []string `json:"slos"`
	// Omitted for SLOLastRun, the rule of every sweep before the field,
	// so that those sweeps keep their identity.
	SLORule SLORule `json:"slo_rule,omitempty"`
	// Omitted when empty, so that the sweeps before it keep their identity.
	EnvoyEnv []string `json:"envoy_env,omitempty"`
	AuditLog bool     `json:"audit_log,omitempty"`
	// Omitted for HTTP/1.1 in clear, what every sweep before them measured.
	Protocol string `json:"protocol,omitempty"`
	TLS      bool   `json:"tls,omitempty"`
	// Omitted when 0: the sweeps before it sent no attack under load.
	AttackSharePct float64 `json:"attack_share_pct,omitempty"`
	// Omitted when none: the sweeps before it had none.
	Modules []moduleflavor.Spec `json:"module_flavors,omitempty"`
}

// MarshalJSON writes the plan file form.
func (p Plan) MarshalJSON() ([]byte, error) {
	return json.Marshal(planJSON{
		Flavors: p.Flavors, Tiers: p.Tiers, Shapes: p.Shapes, Ladder: p.Ladder,
		FloorRPS: p.FloorRPS, Connections: p.Connections,
		Warmup: p.Warmup.String(), Measure: p.Measure.String(), Cooldown: p.Cooldown.String(),
		Rounds: p.Rounds, Confirm: p.Confirm, MaxLoadgenCPU: p.MaxLoadgenCPU, MaxLoadgenLateness: p.MaxLoadgenLateness,
		MaxLoadgenDelay: p.MaxLoadgenDelay.String(), MaxCPUSteal: p.MaxCPUSteal, KneeResolution: p.KneeResolution,
		SLOs: durationStrings(p.SLOs), SLORule: omitLastRun(p.SLORule), EnvoyEnv: p.EnvoyEnv, AuditLog: p.AuditLog,
		Protocol: omitH1(p.Protocol), TLS: p.TLS, AttackSharePct: p.AttackSharePct, Modules: p.Modules,
	})
}

// UnmarshalJSON overlays the fields present in data on p, so that decoding
// into Default() keeps the defaults of omitted fields. Unknown fields are an
// error: a typo in a plan file must not silently fall back to a default.
func (p *Plan) UnmarshalJSON(data []byte) error {
	// Clones: decoding into a non-nil slice reuses its backing array.
	f := planJSON{
		Flavors: slices.Clone(p.Flavors), Tiers: slices.Clone(p.Tiers),
		Shapes: slices.Clone(p.Shapes), Ladder: slices.Clone(p.Ladder),
		FloorRPS: p.FloorRPS, Connections: p.Connections,
		Warmup: p.Warmup.String(), Measure: p.Measure.String(), Cooldown: p.Cooldown.String(),
		Rounds: p.Rounds, Confirm: p.Confirm, MaxLoadgenCPU: p.MaxLoadgenCPU, MaxLoadgenLateness: p.MaxLoadgenLateness,
		MaxLoadgenDelay: p.MaxLoadgenDelay.String(), MaxCPUSteal: p.MaxCPUSteal, KneeResolution: p.KneeResolution,
		SLOs: durationStrings(p.SLOs), SLORule: p.SLORule, EnvoyEnv: slices.Clone(p.EnvoyEnv), AuditLog: p.AuditLog,
		Protocol: p.Protocol, TLS: p.TLS, AttackSharePct: p.AttackSharePct, Modules: slices.Clone(p.Modules),
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return err
	}
	durations := []struct {
		name string
		text string
		dst  *time.Duration
	}{
		{"warmup", f.Warmup, &p.Warmup},
		{"measure", f.Measure, &p.Measure},
		{"cooldown", f.Cooldown, &p.Cooldown},
		{"max_loadgen_delay", f.MaxLoadgenDelay, &p.MaxLoadgenDelay},
	}
	for _, d := range durations {
		v, err := time.ParseDuration(d.text)
		if err != nil {
			return fmt.Errorf("%s: %w (write a Go duration such as \"5s\")", d.name, err)
		}
		*d.dst = v
	}
	p.Flavors, p.Tiers, p.Shapes, p.Ladder, p.FloorRPS = f.Flavors, f.Tiers, f.Shapes, f.Ladder, f.FloorRPS
	p.Connections, p.Rounds, p.Confirm = f.Connections, f.Rounds, f.Confirm
	p.MaxLoadgenCPU, p.MaxLoadgenLateness, p.KneeResolution = f.MaxLoadgenCPU, f.MaxLoadgenLateness, f.KneeResolution
	p.MaxCPUSteal, p.EnvoyEnv, p.AuditLog = f.MaxCPUSteal, f.EnvoyEnv, f.AuditLog
	p.Protocol, p.TLS, p.AttackSharePct, p.Modules = f.Protocol, f.TLS, f.AttackSharePct, f.Modules
	if p.Protocol == "" { // a plan from before the field: HTTP/1.1
		p.Protocol = ProtocolH1
	}
	// Decoded over the defaults (a plan file), an omitted rule is the
	// default; over nothing (a sweep's metadata), it is the rule of the
	// sweeps before the field.
	p.SLORule = f.SLORule
	if p.SLORule == "" {
		p.SLORule = SLOLastRun
	}
	slos, err := ParseDurations(f.SLOs)
	if err != nil {
		return fmt.Errorf("slos: %w", err)
	}
	p.SLOs = slos
	return nil
}

// ParseDurations reads Go durations ("10ms", "1.5s").
func ParseDurations(texts []string) ([]time.Duration, error) {
	out := make([]time.Duration, 0, len(texts))
	for _, t := range texts {
		d, err := time.ParseDuration(t)
		if err != nil {
			return nil, fmt.Errorf("%w (write a Go duration such as \"50ms\")", err)
		}
		out = append(out, d)
	}
	return out, nil
}

// omitLastRun leaves SLOLastRun out of the file form, so that the plans
// written before SLORule existed keep their identity.
func omitLastRun(rule SLORule) SLORule {
	if rule == SLOLastRun {
		return ""
	}
	return rule
}

// omitH1 leaves HTTP/1.1 out of the file form, so that the plans written
// before Protocol existed keep their identity.
func omitH1(protocol string) string {
	if protocol == ProtocolH1 {
		return ""
	}
	return protocol
}

func durationStrings(ds []time.Duration) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}

// SLOMs is SLOs in milliseconds.
func (p Plan) SLOMs() []float64 {
	out := make([]float64, len(p.SLOs))
	for i, d := range p.SLOs {
		out[i] = float64(d) / float64(time.Millisecond)
	}
	return out
}

// KneeOptions are the knee search options of the plan: the reference method
// with the plan's confirmation and descent floor, bisected to the plan's
// resolution.
func (p Plan) KneeOptions() knee.Options {
	o := knee.DefaultOptions()
	o.Confirm, o.Floor = p.Confirm, p.FloorRPS
	// Bisect to KneeResolution (at most 5%) at every rate: the absolute
	// 250 RPS floor of the gap made every knee below a few thousand RPS
	// coarser than the rounds' own spread.
	o.MinGap, o.GapFraction = 1, p.KneeResolution
	o.MaxInvalidRetries = invalidRetries
	return o
}

// invalidRetries is how often a sweep repeats a step the harness could not
// trust before the round gives up. Cloud VMs lose CPU to their host in
// bursts of seconds (2-20% of a CPU seen here, cpu_steal_s); one retry
// often lands in the same burst, and a round given up is a round lost.
const invalidRetries = 3

// LoadFile reads a JSON plan file over the defaults and validates it.
func LoadFile(path string) (Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Plan{}, fmt.Errorf("read plan: %w", err)
	}
	p := Default()
	if err := json.Unmarshal(data, &p); err != nil {
		return Plan{}, fmt.Errorf("parse plan %s: %w", path, err)
	}
	var retired struct {
		P99SLO *string `json:"p99_slo"`
	}
	if json.Unmarshal(data, &retired) == nil && retired.P99SLO != nil {
		return Plan{}, fmt.Errorf("plan %s: p99_slo is retired: list p99 objectives in slos (e.g. [\"10ms\", \"50ms\"]), whose knees are searched for", path)
	}
	if err := p.Validate(); err != nil {
		return Plan{}, fmt.Errorf("plan %s: %w", path, err)
	}
	return p, nil
}

// Configs is the cross product flavor x tier x shape in plan order (flavor,
// then tier, then shape). Flavors without a WAF appear once per shape with
// TierNone.
func (p Plan) Configs() []Config {
	return configs(p.Flavors, p.Tiers, p.Shapes)
}

// ConfigsForRound is Configs with the flavor order reversed on odd rounds, so
// that repeated rounds alternate and slow drift (thermal, noisy neighbours)
// does not always hit the same flavor last.
func (p Plan) ConfigsForRound(round int) []Config {
	flavors := slices.Clone(p.Flavors)
	if round%2 == 1 {
		slices.Reverse(flavors)
	}
	return configs(flavors, p.Tiers, p.Shapes)
}

func configs(flavors, tiers, shapes []string) []Config {
	var out []Config
	for _, f := range flavors {
		flavorTiers := tiers
		if !HasWAF(f) {
			flavorTiers = []string{TierNone}
		}
		for _, t := range flavorTiers {
			for _, s := range shapes {
				out = append(out, Config{Flavor: f, Tier: t, Shape: s})
			}
		}
	}
	return out
}

// Connections per step: enough that each sends about CallsPerConnection
// requests in the window (with fewer, rounding and queueing hide overload),
// at least MinConnections so that one slow request is never the
// bottleneck, at most Plan.Connections.
const (
	CallsPerConnection = 50
	MinConnections     = 4
)

// ConnectionsFor is the number of connections a step at rate uses.
func (p Plan) ConnectionsFor(rate int) int {
	perWindow := int(float64(rate) * p.Measure.Seconds() / CallsPerConnection)
	return max(min(perWindow, p.Connections), min(MinConnections, p.Connections))
}

// MemberConnections are the connections of one member of a mixed shape
// sent at qps: each member is connected as a plain shape at its rate would
// be (ConnectionsFor), since its connections carry only its requests and
// one slow request must not bound its rate either; but never so many that
// a connection gets fewer than two calls in the window, and at least one.
func (p Plan) MemberConnections(qps float64) int {
	calls := qps * p.Measure.Seconds()
	perWindow := int(calls / CallsPerConnection)
	n := max(min(perWindow, p.Connections), min(MinConnections, p.Connections))
	return max(min(n, int(calls/2)), 1)
}
