package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/modulecost"
	"github.com/wafsweep/wafsweep/orchestrator/moduleflavor"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/procstat"
	"github.com/wafsweep/wafsweep/orchestrator/sweep"
	"github.com/wafsweep/wafsweep/orchestrator/target/local"
)

// sweepFlags are the command line of `wafsweep sweep`.
type sweepFlags struct {
	profile, planFile                     string
	flavors, tiers, shapes, ladder, slos  string
	connections, rounds, floor            int
	kneeResolution                        float64
	warmup, measure, cooldown             time.Duration
	sweepID, resultsDir, rulesets, module string
	target                                string
	proxyCPUs, loadgenCPUs, backendCPUs   string
	backendCost                           backend.Cost
	envoyEnv                              []string
	moduleFlavors                         []string // NAME=FILE
	auditLog, tls                         bool
	protocol, attackShare                 string
	kube                                  kubeFlags
}

func parseSweepFlags(args []string, stderr io.Writer) (sweepFlags, *flag.FlagSet, error) {
	var f sweepFlags
	fs := flag.NewFlagSet("wafsweep sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.profile, "profile", "short", "starting plan: short (a first run in about ten minutes: full CRS beside vanilla Envoy and direct, GET and json_1k, one round of 4 s windows, p99 <= 50 ms), full (the whole matrix, one round), reference (the whole matrix, 3 alternating rounds of 20 s windows: the figures to plan on); each adds waf-accelerated; or module-cost and module-cost-full-crs (vanilla Envoy, the no-op module and the module's light tiers at 4,000 RPS, and full CRS, stock and accelerated, at 800 RPS, GET, 3 rounds: what make bench-module turns into results/bench/module.csv)")
	fs.StringVar(&f.planFile, "plan", "", "JSON plan file (replaces --profile; flags below still override it)")
	fs.StringVar(&f.flavors, "flavors", "", "comma-separated flavors: "+strings.Join(plan.Flavors(), ", "))
	fs.StringVar(&f.tiers, "tiers", "", "comma-separated tiers: "+strings.Join(plan.Tiers(), ", "))
	fs.StringVar(&f.shapes, "shapes", "", "comma-separated shapes: "+strings.Join(plan.Shapes(), ", ")+"; or a mix of them sent together, e.g. mix:get=60,json_1k=30,json_10k=10 (weights in proportion of the step's rate), or mixfile:PATH for a mix read from a file (one \"SHAPE WEIGHT\" per line)")
	fs.StringVar(&f.ladder, "ladder", "", "comma-separated target rates in RPS, ascending (e.g. 1000,2000,4000)")
	fs.StringVar(&f.slos, "slo", "", "comma-separated p99 objectives whose highest sustainable rate is searched for each configuration (default 10ms,50ms,250ms; \"none\" turns the searches off)")
	fs.IntVar(&f.connections, "connections", 0, "load generator connections")
	fs.IntVar(&f.rounds, "rounds", 0, "repeats of the whole sweep, in alternating flavor order")
	fs.Float64Var(&f.kneeResolution, "knee-resolution", 0, "bisection gap as a fraction of the highest passing rate, at most 0.05 (default 0.05)")
	fs.IntVar(&f.floor, "floor", -1, "lowest rate tried below the ladder when its bottom fails (0: report censored below; -1: the profile's, 1 for full and reference, 20 for short, 50 otherwise)")
	fs.DurationVar(&f.warmup, "warmup", 0, "warm-up before each measured step")
	fs.DurationVar(&f.measure, "measure", 0, "measured window of each step")
	fs.DurationVar(&f.cooldown, "cooldown", 0, "pause after each step")
	fs.Func("envoy-env", "NAME=VALUE added to Envoy's environment, e.g. GOGC=400 for the module's Go runtime (repeat for more; part of the plan and the sweep's identity; the Go runtime's GOGC, GOMEMLIMIT, GODEBUG and GOMAXPROCS reach Envoy only this way)", func(v string) error {
		f.envoyEnv = append(f.envoyEnv, v)
		return nil
	})
	fs.Func("module-flavor", "NAME=FILE: a flavor NAME for any Envoy dynamic module, described by the JSON spec FILE (its library, module and filter names, the filter config of each tier, the environment it needs; see orchestrator/moduleflavor), then swept like the built-in flavors (added to the profile's flavors unless --flavors lists them); its spec and its library's digest are part of the plan and the sweep's identity (repeat for more; local target)", func(v string) error {
		f.moduleFlavors = append(f.moduleFlavors, v)
		return nil
	})
	fs.BoolVar(&f.auditLog, "audit-log", false, "every WAF configuration writes its JSON audit log of every transaction into its run directory, as tier full-crs-audit does (Coraza's, ModSecurity's for nginx); steps record audit bytes per request and the proxy's disk writes (part of the plan and the sweep's identity)")
	fs.StringVar(&f.protocol, "protocol", "", "what the load generator speaks to the proxy: h1 (HTTP/1.1, the default) or h2 (HTTP/2: h2c with prior knowledge, or ALPN h2 with --tls); the proxy speaks HTTP/1.1 to the backend either way (part of the plan and the sweep's identity)")
	fs.StringVar(&f.attackShare, "attack-share", "", "share of each step's rate sent as the attacks of each configuration's tier, e.g. 1% (the pre-check's attacks, interleaved); a step then also needs every attack blocked (or passed, where nothing inspects) and no benign request blocked (part of the plan and the sweep's identity)")
	fs.BoolVar(&f.tls, "tls", false, "the proxy terminates TLS (ECDSA P-256 certificate made for the run, TLS 1.3 or 1.2 as negotiated) and the load generator verifies it (part of the plan and the sweep's identity)")
	fs.StringVar(&f.sweepID, "sweep-id", "", "name of the output directory under --results (default: derived from the plan, so the same command resumes)")
	fs.StringVar(&f.resultsDir, "results", "", "results directory (default <repo>/results)")
	fs.StringVar(&f.rulesets, "rulesets", "", "rule tier directory (default <repo>/rulesets)")
	fs.StringVar(&f.module, "module", os.Getenv("CORAZAWAF_MODULE"), "libcorazawaf.so (default $CORAZAWAF_MODULE or <repo>/build/libcorazawaf.so); the accelerated build and the no-op module are read beside it, where make build puts them")
	fs.StringVar(&f.target, "target", "local", "where to run: local, kind (a local kind cluster) or kube (any cluster, e.g. GKE; see the README)")
	f.kube.register(fs)
	fs.StringVar(&f.proxyCPUs, "proxy-cpus", "", "CPUs of the proxy, e.g. 1 or 2-3 (default: the upper half)")
	fs.StringVar(&f.loadgenCPUs, "loadgen-cpus", "", "CPUs of the load generator (default: the lower half)")
	fs.StringVar(&f.backendCPUs, "backend-cpus", "", "CPUs of the backend (default: the load generator's)")
	fs.DurationVar(&f.backendCost.CPU, "backend-cpu-per-request", 0, "local: a calibration backend that spends this CPU time per request (sweep it as direct on its own --backend-cpus: its capacity is known)")
	fs.DurationVar(&f.backendCost.Sleep, "backend-sleep-per-request", 0, "local: a calibration backend that sleeps this long per request (its latency is known)")
	if err := fs.Parse(args); err != nil {
		return f, fs, err
	}
	if fs.NArg() > 0 {
		return f, fs, fmt.Errorf("unexpected arguments %q: flags only", fs.Args())
	}
	return f, fs, nil
}

// shortProfile is `make sweep`'s default, a first run that is quick and
// right: the tier teams deploy (full CRS) beside vanilla Envoy and the
// rig's own ceiling (direct), on a GET and a 1 KB JSON body, in about ten
// minutes on a 2-core machine with every row valid. Three rungs find the
// baselines censored above in three steps each; the floor of 20 RPS lets
// the stock module's JSON search find its 50 ms objective (its p99 was
// 51 ms at 50 RPS); 1 s warm-ups and 4 s windows keep a step near 7 s
// (their calls counted by intended time, a warm-up's backlog is never
// credited to the window). The full and reference profiles cover every
// tier and shape.
func shortProfile() plan.Plan {
	p := plan.Default()
	p.Tiers = []string{plan.TierFullCRS}
	p.Shapes = []string{plan.ShapeGet, plan.ShapeJSON1K}
	p.Ladder = []int{1000, 3000, 10000}
	p.FloorRPS = 20
	p.Warmup, p.Measure, p.Cooldown = 1*time.Second, 4*time.Second, 500*time.Millisecond
	p.SLOs = []time.Duration{50 * time.Millisecond}
	return p
}

// matrixFloorRPS is the descent floor of the profiles that cover the whole
// matrix. Its slowest configuration, the stock module at full CRS on a
// 50 KB JSON body, passes about 2 RPS on one core (0.5 s per request in
// results/bench/engine.csv): the default floor of 50 would report it
// censored below instead of measuring it.
const matrixFloorRPS = 1

// fullProfile is the whole matrix, one round.
func fullProfile() plan.Plan {
	p := plan.Default()
	p.FloorRPS = matrixFloorRPS
	return p
}

// referenceProfile makes the datasets to plan on: the whole matrix, three
// rounds in alternating flavor order, 20 s windows.
func referenceProfile() plan.Plan {
	p := fullProfile()
	p.Rounds = 3
	p.Warmup, p.Measure, p.Cooldown = 5*time.Second, 20*time.Second, 2*time.Second
	return p
}

// profiles are the starting plans of --profile, in the order the flag's
// help names them. The matrix profiles add the accelerated build after waf
// (withAccelerated); the module-cost ones measure the stock module alone.
var profiles = []struct {
	name string
	plan func() plan.Plan
}{
	{"short", func() plan.Plan { return withAccelerated(shortProfile()) }},
	{"full", func() plan.Plan { return withAccelerated(fullProfile()) }},
	{"reference", func() plan.Plan { return withAccelerated(referenceProfile()) }},
	{"module-cost", modulecost.LightPlan},
	{"module-cost-full-crs", modulecost.FullCRSPlan},
}

// profilePlan is the named profile's plan.
func profilePlan(name string) (plan.Plan, error) {
	names := make([]string, len(profiles))
	for i, pr := range profiles {
		if pr.name == name {
			return pr.plan(), nil
		}
		names[i] = pr.name
	}
	return plan.Plan{}, fmt.Errorf("--profile %q: use %s or %s", name,
		strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
}

// withAccelerated adds the accelerated build after waf: the profiles show
// what it gains end to end, on every target (the Kubernetes image carries
// both builds).
func withAccelerated(p plan.Plan) plan.Plan {
	out := make([]string, 0, len(p.Flavors)+1)
	for _, f := range p.Flavors {
		out = append(out, f)
		if f == plan.FlavorWAF {
			out = append(out, plan.FlavorWAFAccelerated)
		}
	}
	p.Flavors = out
	return p
}

// buildPlan applies the profile or plan file, then the flags.
func (f sweepFlags) buildPlan() (plan.Plan, error) {
	load := func() (plan.Plan, error) { return profilePlan(f.profile) }
	if f.planFile != "" {
		load = func() (plan.Plan, error) { return plan.LoadFile(f.planFile) }
	}
	p, err := load()
	if err != nil {
		return p, err
	}
	var errs []error
	list := func(s string, dst *[]string) {
		if s != "" {
			*dst = splitList(s)
		}
	}
	list(f.flavors, &p.Flavors)
	list(f.tiers, &p.Tiers)
	if len(f.moduleFlavors) > 0 {
		modules, err := loadModuleFlavors(f.moduleFlavors)
		errs = append(errs, err)
		p.Modules = modules
		if f.flavors == "" {
			for _, m := range modules {
				p.Flavors = append(p.Flavors, m.Name)
			}
		}
	}
	if f.shapes != "" {
		shapes, err := readMixFiles(splitShapes(f.shapes))
		errs = append(errs, err)
		p.Shapes = shapes
	}
	if f.ladder != "" {
		p.Ladder = nil
		for _, s := range splitList(f.ladder) {
			n, err := strconv.Atoi(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("--ladder: %q is not a rate in RPS", s))
			}
			p.Ladder = append(p.Ladder, n)
		}
	}
	switch f.slos {
	case "":
	case "none":
		p.SLOs = nil
	default:
		slos, err := plan.ParseDurations(splitList(f.slos))
		if err != nil {
			errs = append(errs, fmt.Errorf("--slo: %w", err))
		}
		p.SLOs = slos
	}
	if f.kneeResolution != 0 {
		p.KneeResolution = f.kneeResolution
	}
	setInt(&p.Connections, f.connections)
	setInt(&p.Rounds, f.rounds)
	if f.floor >= 0 {
		p.FloorRPS = f.floor
	}
	setDur(&p.Warmup, f.warmup)
	setDur(&p.Measure, f.measure)
	setDur(&p.Cooldown, f.cooldown)
	if len(f.envoyEnv) > 0 {
		p.EnvoyEnv = f.envoyEnv
	}
	if f.auditLog {
		p.AuditLog = true
	}
	if f.protocol != "" {
		p.Protocol = f.protocol
	}
	if f.tls {
		p.TLS = true
	}
	if f.attackShare != "" {
		pct, err := parsePercent(f.attackShare)
		if err != nil {
			errs = append(errs, fmt.Errorf("--attack-share: %w", err))
		}
		p.AttackSharePct = pct
	}
	errs = append(errs, p.Validate())
	return p, errors.Join(errs...)
}

// loadModuleFlavors reads each --module-flavor NAME=FILE's spec.
func loadModuleFlavors(args []string) ([]moduleflavor.Spec, error) {
	var specs []moduleflavor.Spec
	var errs []error
	for _, arg := range args {
		name, file, ok := strings.Cut(arg, "=")
		if !ok || name == "" || file == "" {
			errs = append(errs, fmt.Errorf("--module-flavor %q: write NAME=FILE, e.g. peer=peer.json", arg))
			continue
		}
		spec, err := moduleflavor.Load(name, file)
		errs = append(errs, err)
		specs = append(specs, spec)
	}
	return specs, errors.Join(errs...)
}

// splitShapes is splitList for --shapes, where a mix's members are
// comma-separated too: a part that weighs a shape ("json_1k=30") belongs
// to the mix before it ("get,mix:get=60,json_1k=30,json_10k=10" is two
// shapes). A weighed part with no mix before it stays a shape of its own,
// which the plan's validation refuses by name.
func splitShapes(s string) []string {
	var out []string
	for _, part := range splitList(s) {
		if n := len(out); n > 0 && plan.IsMix(out[n-1]) && !plan.IsMix(part) && strings.Contains(part, "=") {
			out[n-1] += "," + part
			continue
		}
		out = append(out, part)
	}
	return out
}

// readMixFiles replaces each mix file named in shapes (plan.MixFilePrefix)
// by the mix it holds, so that the plan, and the sweep's identity, carry
// the mix itself and not a path whose file may change.
func readMixFiles(shapes []string) ([]string, error) {
	var errs []error
	out := slices.Clone(shapes)
	for i, s := range out {
		path, ok := strings.CutPrefix(s, plan.MixFilePrefix)
		if !ok {
			continue
		}
		mix, err := plan.ReadMixFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("--shapes: %w", err))
		}
		out[i] = mix
	}
	return out, errors.Join(errs...)
}

// parsePercent reads "1%", "0.5%" or "1" as a percentage.
func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a percentage such as 1%%", s)
	}
	return v, nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func setInt(dst *int, v int) {
	if v > 0 {
		*dst = v
	}
}

func setDur(dst *time.Duration, v time.Duration) {
	if v > 0 {
		*dst = v
	}
}

// sweepIdentity digests everything that shapes a sweep's numbers: the
// target, the plan, and the identity of what is measured and where (the
// builds' digests, the CPU assignment, the cluster). The sweep records the
// digest (sweep.Options.Identity), so that one named by --sweep-id still
// refuses to resume on another setup; the default directory name, id, is
// the target and the digest's head. Running the same command on the same
// builds finds and resumes the sweep; after a rebuild, or on other CPUs,
// the same command starts a new one instead of mixing two in one dataset.
func sweepIdentity(target string, p plan.Plan, identity ...any) (digest, id string, err error) {
	b, err := json.Marshal(struct {
		Target   string
		Plan     plan.Plan
		Identity []any
	}{target, p, identity})
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(b)
	digest = hex.EncodeToString(sum[:])
	return digest, target + "-" + digest[:8], nil
}

func cpuFlag(name, value string) ([]int, error) {
	if value == "" {
		return nil, nil
	}
	cpus, err := procstat.ParseCPUList(value)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", name, err)
	}
	return cpus, nil
}

func runSweep(args []string) int {
	f, _, err := parseSweepFlags(args, os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "wafsweep sweep: %v\n", err)
		return 2
	}
	opts, err := f.sweepOptions()
	if err != nil {
		fmt.Fprintf(os.Stderr, "wafsweep sweep: nothing was started:\n%v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if s, ok := opts.Target.(startable); ok {
		// Deleted also after Ctrl-C, with a context of its own.
		defer func() {
			closeCtx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			defer cancel()
			if err := s.Close(closeCtx); err != nil {
				fmt.Fprintf(os.Stderr, "wafsweep: cleaning up the cluster: %v\n", err)
			}
		}()
		if err := s.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "wafsweep sweep: starting the %s target: %v\n", opts.Target.Name(), err)
			return 1
		}
	}
	fmt.Fprintf(os.Stderr, "wafsweep: sweep %s -> %s\n", opts.SweepID, opts.OutDir)
	if err := sweep.Run(ctx, opts); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(os.Stderr, "wafsweep: interrupted; finished steps are in %s; run the same command again to resume\n", opts.OutDir)
			return 130
		}
		fmt.Fprintf(os.Stderr, "wafsweep sweep: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "wafsweep: done: %s\n", filepath.Join(opts.OutDir, sweep.ReportFile))
	return 0
}

// sweepOptions checks everything that can be checked before anything
// starts, and reports all problems at once.
func (f sweepFlags) sweepOptions() (sweep.Options, error) {
	var errs []error
	p, err := f.buildPlan()
	errs = append(errs, err)
	root, rootErr := envoyproc.RepoRoot()
	if f.resultsDir == "" || f.rulesets == "" || f.module == "" {
		errs = append(errs, rootErr)
	}
	def := func(v, rel string) string {
		if v != "" || rootErr != nil {
			return v
		}
		return filepath.Join(root, rel)
	}
	resultsDir, rulesets, module := def(f.resultsDir, "results"), def(f.rulesets, "rulesets"), def(f.module, "build/libcorazawaf.so")
	if f.target == dataset.TargetKind || f.target == dataset.TargetKube {
		if !f.backendCost.IsZero() {
			errs = append(errs, errors.New("--backend-cpu-per-request and --backend-sleep-per-request: the calibration backend runs on the local target only"))
		}
		return f.kubeSweepOptions(p, errs, root, resultsDir, rulesets, module)
	}
	if f.target != "local" {
		errs = append(errs, fmt.Errorf("--target %q: use local, kind or kube", f.target))
	}
	proxy, err1 := cpuFlag("proxy-cpus", f.proxyCPUs)
	loadgen, err2 := cpuFlag("loadgen-cpus", f.loadgenCPUs)
	backendCPUs, err3 := cpuFlag("backend-cpus", f.backendCPUs)
	errs = append(errs, err1, err2, err3)
	if err := errors.Join(errs...); err != nil {
		return sweep.Options{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return sweep.Options{}, err
	}
	tgt, err := local.New(local.Options{ModulePath: module, ProxyCPUs: proxy, LoadgenCPUs: loadgen, BackendCPUs: backendCPUs,
		SharedCPUs: f.kube.allowSharedCPUs, BackendCommand: []string{self, "backend"}, BackendCost: f.backendCost, PinSelf: true,
		EnvoyEnv: p.EnvoyEnviron()})
	if err != nil {
		return sweep.Options{}, err
	}
	if err := tgt.CheckModule(p); err != nil {
		return sweep.Options{}, err
	}
	versions := planVersions(p, tgt)
	identity, id, err := sweepIdentity(tgt.Name(), p, tgt.Describe(), versions.Build())
	if err != nil {
		return sweep.Options{}, err
	}
	if f.sweepID != "" {
		id = f.sweepID
	}
	opts := sweep.Options{
		Plan: p, Target: tgt, SweepID: id, Identity: identity, OutDir: filepath.Join(resultsDir, id), RulesetsDir: rulesets,
		CommandLine: os.Args, Versions: versions, Progress: os.Stderr,
	}
	ctx, cancel := context.WithTimeout(context.Background(), moduleValidationTimeout)
	defer cancel()
	return opts, sweep.CheckModuleConfigs(ctx, opts)
}

// moduleValidationTimeout bounds Envoy's validation of the module flavors'
// configs (about a second each for full CRS).
const moduleValidationTimeout = 5 * time.Minute
