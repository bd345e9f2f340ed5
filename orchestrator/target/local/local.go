// Package local is the default target: backend, proxy and load generator as
// processes on this machine, all on 127.0.0.1, each role pinned to its own
// CPUs. The load generator (Fortio) runs inside the wafsweep process.
package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/nginxconfig"
	"github.com/wafsweep/wafsweep/orchestrator/nginxproc"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/procstat"
	"github.com/wafsweep/wafsweep/orchestrator/target"
)

// Options configures the local target.
type Options struct {
	EnvoyBinary string // default: envoyproc.FindBinary()
	ModulePath  string // libcorazawaf.so, required for WAF flavors
	// AcceleratedModulePath is libcorazawaf-accelerated.so, for the
	// waf-accelerated flavor; empty means the file of that name beside
	// ModulePath (where `make build` puts both).
	AcceleratedModulePath string
	// NoopModulePath is libnoopmodule.so, for the envoy-noop-module
	// flavor; empty means the file of that name beside ModulePath.
	NoopModulePath string
	// CPU sets per role. Defaults split the machine: the proxy gets the
	// upper half of the CPUs, the load generator and backend the rest.
	ProxyCPUs, LoadgenCPUs, BackendCPUs []int
	// SharedCPUs lets the proxy share CPUs with the load generator (for
	// example, two Envoy workers on a two-core machine). Latency and
	// capacity are then not the proxy's alone; Describe says so.
	SharedCPUs bool
	// BackendCommand runs the backend as its own process (e.g.
	// [wafsweep backend]); it is given --listen ADDR. Empty runs the backend
	// inside this process, sharing the load generator's CPUs (tests).
	BackendCommand []string
	// BackendCost makes the backend a calibration backend: it spends this
	// much per request (see backend.Cost). Its CPUs must then be its own.
	BackendCost backend.Cost
	// PinSelf pins this process (the load generator) to LoadgenCPUs.
	PinSelf bool
	// Nginx is the nginx and ModSecurity connector of the
	// nginx-modsecurity flavor; empty fields mean nginxconfig.Find().
	Nginx nginxconfig.Installation
	// EnvoyEnv is added to the environment Envoy inherits (a plan's
	// plan.Plan.EnvoyEnviron).
	EnvoyEnv []string
}

// Local deploys configurations as local processes.
type Local struct {
	opts Options
	// envoyErr is why no Envoy binary was found: only flavors that run
	// Envoy need one, so it is reported when such a flavor is planned.
	envoyErr error
	// nginxPlanned is set by CheckModule, so Describe records nginx's
	// versions only in sweeps that use it.
	nginxPlanned bool
}

// New validates the options and fills in defaults.
func New(opts Options) (*Local, error) {
	n := runtime.NumCPU()
	if len(opts.ProxyCPUs) == 0 {
		opts.ProxyCPUs = span(n/2, n)
	}
	if len(opts.LoadgenCPUs) == 0 {
		opts.LoadgenCPUs = span(0, max(n/2, 1))
	}
	if len(opts.BackendCPUs) == 0 {
		opts.BackendCPUs = opts.LoadgenCPUs
	}
	var errs []error
	for role, cpus := range map[string][]int{"proxy": opts.ProxyCPUs, "loadgen": opts.LoadgenCPUs, "backend": opts.BackendCPUs} {
		for _, c := range cpus {
			if c < 0 || c >= n {
				errs = append(errs, fmt.Errorf("--%s-cpus: CPU %d does not exist (this machine has 0-%d)", role, c, n-1))
			}
		}
	}
	if !opts.BackendCost.IsZero() {
		if err := opts.BackendCost.Validate(); err != nil {
			errs = append(errs, err)
		}
		if shared := procstat.CommonCPUs(opts.BackendCPUs, opts.LoadgenCPUs); len(shared) > 0 {
			errs = append(errs, fmt.Errorf("a calibration backend shares CPUs %s with the load generator: give it its own with --backend-cpus, or its capacity is not known",
				procstat.FormatCPUList(shared)))
		}
	}
	if shared := procstat.CommonCPUs(opts.ProxyCPUs, opts.LoadgenCPUs); len(shared) > 0 && !opts.SharedCPUs {
		errs = append(errs, fmt.Errorf("--proxy-cpus and --loadgen-cpus share CPUs %s: give the proxy its own cores (or accept it with --allow-shared-cpus)",
			procstat.FormatCPUList(shared)))
	}
	var envoyErr error
	if opts.EnvoyBinary == "" {
		opts.EnvoyBinary, envoyErr = envoyproc.FindBinary()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if opts.PinSelf {
		if err := procstat.PinProcess(os.Getpid(), opts.LoadgenCPUs); err != nil {
			return nil, err
		}
		// The runtime sized itself by every CPU at start: more Ps than
		// CPUs would make the load generator's own threads wait for one
		// another, which its run-delay check would blame on others.
		runtime.GOMAXPROCS(len(opts.LoadgenCPUs))
	}
	return &Local{opts: opts, envoyErr: envoyErr}, nil
}

func span(lo, hi int) []int {
	var cpus []int
	for c := lo; c < hi; c++ {
		cpus = append(cpus, c)
	}
	return cpus
}

// Name implements target.Target.
func (l *Local) Name() string { return dataset.TargetLocal }

// ProxyCPU implements target.LocalProxy.
func (l *Local) ProxyCPU() int { return l.opts.ProxyCPUs[0] }

// Describe implements target.Target.
func (l *Local) Describe() target.Description {
	d := target.Description{CoreAssignment: map[string]string{
		"proxy":   procstat.FormatCPUList(l.opts.ProxyCPUs),
		"loadgen": procstat.FormatCPUList(l.opts.LoadgenCPUs),
		"backend": procstat.FormatCPUList(l.opts.BackendCPUs),
	}}
	d.CPUModel, d.Cores = procstat.CPUInfo()
	if !l.opts.BackendCost.IsZero() {
		d.Notes = append(d.Notes, l.opts.BackendCost.Note())
	}
	if len(l.opts.BackendCommand) == 0 {
		d.Notes = append(d.Notes, "backend ran inside the load generator's process: backend saturation is not checked")
	}
	if shared := procstat.CommonCPUs(l.opts.ProxyCPUs, l.opts.LoadgenCPUs); len(shared) > 0 {
		d.Notes = append(d.Notes, "proxy shares CPUs "+procstat.FormatCPUList(shared)+
			" with the load generator (--allow-shared-cpus): knees, latency and cores per 1k RPS are not the proxy's alone")
	}
	if slices.Equal(l.opts.LoadgenCPUs, l.opts.BackendCPUs) {
		d.Notes = append(d.Notes, "load generator and backend share CPUs "+procstat.FormatCPUList(l.opts.LoadgenCPUs))
	}
	if l.nginxPlanned {
		d.Notes = append(d.Notes, nginxNotes(l.opts.Nginx)...)
	}
	return d
}

// CheckModule fails early, before anything starts, when a planned flavor
// lacks what it runs: Envoy, its module, or nginx with the
// ModSecurity connector. Every problem is reported with its fix.
func (l *Local) CheckModule(p plan.Plan) error {
	var errs []error
	envoyReported := false
	for _, f := range p.Flavors {
		switch {
		case plan.RunsEnvoy(f):
			if l.envoyErr != nil && !envoyReported {
				errs = append(errs, fmt.Errorf("flavor %s: %w", f, l.envoyErr))
				envoyReported = true
			}
		case f == plan.FlavorNginxModSecurity:
			l.nginxPlanned = true
			if _, err := l.nginxInstallation(); err != nil {
				errs = append(errs, fmt.Errorf("flavor %s: %w", f, err))
			}
		}
		if spec, ok := p.Module(f); ok {
			if _, err := os.Stat(spec.LibraryPath); err != nil {
				errs = append(errs, fmt.Errorf("flavor %s: its library: %w", f, err))
			}
		} else if plan.LoadsModule(f) {
			if module := l.ModulePath(f); module == "" {
				errs = append(errs, fmt.Errorf("flavor %s needs its module: run `make build` or pass --module", f))
			} else if _, err := os.Stat(module); err != nil {
				errs = append(errs, fmt.Errorf("flavor %s: module %s: %w (run `make build`)", f, module, err))
			}
		}
	}
	return errors.Join(errs...)
}

// ModulePath is the module a flavor loads: the path given for its build,
// else the file `make build` puts beside the stock build (BuildFor).
func (l *Local) ModulePath(flavor string) string {
	var own string
	switch flavor {
	case plan.FlavorWAFAccelerated:
		own = l.opts.AcceleratedModulePath
	case plan.FlavorEnvoyNoopModule:
		own = l.opts.NoopModulePath
	default:
		return l.opts.ModulePath
	}
	if own != "" || l.opts.ModulePath == "" {
		return own
	}
	return BuildFor(flavor, l.opts.ModulePath)
}

// BuildFor is the module a flavor loads when only the stock build's path
// is known: the accelerated corazawaf build (acceleration on by default)
// for waf-accelerated, the no-op module for envoy-noop-module, both where
// `make build` puts them beside stock; stock otherwise.
func BuildFor(flavor, stock string) string {
	switch flavor {
	case plan.FlavorWAFAccelerated:
		return AcceleratedBuildOf(stock)
	case plan.FlavorEnvoyNoopModule:
		return NoopModuleBeside(stock)
	}
	return stock
}

// AcceleratedBuildOf is where `make build` puts the accelerated build of
// the stock module: beside it.
func AcceleratedBuildOf(module string) string {
	return filepath.Join(filepath.Dir(module), "libcorazawaf-accelerated.so")
}

// NoopModuleBeside is where `make build` puts the no-op module: beside the
// stock corazawaf build.
func NoopModuleBeside(module string) string {
	return filepath.Join(filepath.Dir(module), "libnoopmodule.so")
}

// Deploy implements target.Target.
func (l *Local) Deploy(ctx context.Context, d target.Deployment) (target.Deployed, error) {
	be, err := l.startBackend(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("starting the backend: %w", err)
	}
	dep := &deployed{local: l, backend: be, auditLog: d.AuditLog}
	switch flavor := d.Config.Flavor; {
	case flavor == plan.FlavorDirect:
		dep.url = d.ListenerURL(be.port())
		return dep, nil
	case plan.RunsEnvoy(flavor):
		err = dep.startEnvoy(ctx, d)
	case flavor == plan.FlavorNginxModSecurity:
		err = dep.startNginx(ctx, d)
	default:
		err = fmt.Errorf("flavor %s is not available on the local target yet", d.Config.Flavor)
	}
	if err != nil {
		dep.Teardown()
		return nil, err
	}
	return dep, nil
}

func (d *deployed) startEnvoy(ctx context.Context, dep target.Deployment) error {
	if d.local.envoyErr != nil {
		return d.local.envoyErr
	}
	ports, err := envoyproc.FreePorts(2)
	if err != nil {
		return err
	}
	cfgPath, err := d.local.writeBootstrap(dep, ports[0], ports[1], d.backend.port())
	if err != nil {
		return err
	}
	d.envoy, err = envoyproc.Start(ctx, envoyproc.Options{
		Binary: d.local.opts.EnvoyBinary, ConfigPath: cfgPath, LogPath: filepath.Join(dep.RunDir, "envoy.log"),
		AdminPort: ports[1], CPUs: d.local.opts.ProxyCPUs, Concurrency: len(d.local.opts.ProxyCPUs),
		Env: d.local.envoyEnv(dep),
	})
	if err != nil {
		return fmt.Errorf("starting Envoy: %w", err)
	}
	d.url = dep.ListenerURL(ports[0])
	return nil
}

// writeBootstrap writes the deployment's Envoy bootstrap into its run
// directory and returns its path.
func (l *Local) writeBootstrap(dep target.Deployment, listen, admin, upstream int) (string, error) {
	opts := envoyconfig.Options{AdminPort: admin, ListenPort: listen, UpstreamPort: upstream}
	if dep.TLS != nil {
		opts.TLS = &envoyconfig.TLSFiles{CertChain: dep.TLS.Cert, PrivateKey: dep.TLS.Key}
	}
	switch {
	case dep.Module != nil:
		opts.WAF = &envoyconfig.WAFFilter{ModulePath: dep.Module.LibraryPath, ModuleName: dep.Module.ModuleName,
			FilterName: dep.Module.FilterName, ConfigJSON: dep.WAFConfigJSON, ConfigAsStruct: dep.Module.AsStruct(),
			MetricsNamespace: dep.Module.ModuleName}
	case plan.LoadsModule(dep.Config.Flavor):
		opts.WAF = &envoyconfig.WAFFilter{ModulePath: l.ModulePath(dep.Config.Flavor), ConfigJSON: dep.WAFConfigJSON}
	}
	bootstrap, err := envoyconfig.Build(opts)
	if err != nil {
		return "", fmt.Errorf("building the Envoy bootstrap: %w", err)
	}
	cfgPath := filepath.Join(dep.RunDir, "envoy.json")
	return cfgPath, envoyconfig.WriteFile(cfgPath, bootstrap)
}

// envoyEnv is what Envoy's environment gets for the deployment: the
// sweep's (the plan's), then what a module flavor's spec asks for.
func (l *Local) envoyEnv(dep target.Deployment) []string {
	if dep.Module == nil {
		return l.opts.EnvoyEnv
	}
	return append(slices.Clone(l.opts.EnvoyEnv), dep.Module.Env...)
}

// ValidateConfig has Envoy validate the bootstrap the deployment would
// run (`envoy --mode validate`: its module is loaded and its config hook
// runs), without starting anything: a module flavor's config that its
// module refuses fails before the sweep starts, with the module's words.
func (l *Local) ValidateConfig(ctx context.Context, dep target.Deployment) error {
	if l.envoyErr != nil {
		return l.envoyErr
	}
	// Validation binds nothing; the ports only have to differ.
	cfgPath, err := l.writeBootstrap(dep, 2, 3, 4)
	if err != nil {
		return err
	}
	if err := envoyproc.Validate(ctx, l.opts.EnvoyBinary, cfgPath, l.envoyEnv(dep)); err != nil {
		return fmt.Errorf("%s: %w", dep.Config.ID(), err)
	}
	return nil
}

// deployed is one running configuration.
type deployed struct {
	local   *Local
	backend runningBackend
	envoy   *envoyproc.Process
	nginx   *nginxproc.Process
	// nginxStatus counts what nginx served (its status server).
	nginxStatus *nginxproc.StatusCounter
	url         string
	// auditLog is the audit log the proxy writes, "" when none.
	auditLog string
}

func (d *deployed) URL() string { return d.url }

func (d *deployed) LoadgenCores() int { return len(d.local.opts.LoadgenCPUs) }

// ProxyCores is the size of the proxy's cpuset: Envoy and nginx are pinned
// to ProxyCPUs.
func (d *deployed) ProxyCores() float64 {
	if d.envoy == nil && d.nginx == nil {
		return 0
	}
	return float64(len(d.local.opts.ProxyCPUs))
}

// ProxyCompleted reads the count of requests the measured server
// answered: Envoy's downstream_rq_completed from its admin interface,
// nginx's request counter from its status server (stub_status counts a
// request when it is read, a little before Envoy's counter would: within
// the cross-check's slack), or for the direct flavor the backend's own
// count (it is the server measured).
func (d *deployed) ProxyCompleted() (int64, error) {
	switch {
	case d.envoy != nil:
		return d.envoy.DownstreamCompleted(envoyconfig.HTTPStatPrefix)
	case d.nginx != nil:
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return d.nginxStatus.Requests(ctx)
	}
	return d.backend.requests()
}

func (d *deployed) RunLoad(ctx context.Context, specs []loadgen.Spec) (loadgen.Result, []loadgen.Result, error) {
	return loadgen.RunAll(ctx, specs)
}

func (d *deployed) Usage() (target.Usage, error) {
	u := target.Usage{BackendCPUSeconds: d.backend.cpuSeconds(), ProxyThrottledSeconds: -1, // pinned, no quota
		ProxyWrittenBytes: -1, AuditLogBytes: d.auditLogBytes()}
	u.StealSeconds = d.steal()
	if d.nginx != nil {
		return d.nginxUsage(u)
	}
	if d.envoy == nil {
		return u, nil
	}
	var err error
	if u.ProxyCPUSeconds, err = procstat.CPUSeconds(d.envoy.PID()); err != nil {
		return u, err
	}
	mem, err := procstat.ReadMemory(d.envoy.PID())
	if err != nil {
		return u, err
	}
	u.ProxyRSSBytes, u.ProxyPeakRSSBytes = mem.RSSBytes, mem.PeakBytes
	if w, err := procstat.WrittenBytes(d.envoy.PID()); err == nil {
		u.ProxyWrittenBytes = w
	}
	return u, nil
}

// auditLogBytes is the audit log's size: 0 before the proxy's first
// write creates it, -1 when the deployment writes none or it cannot be
// read.
func (d *deployed) auditLogBytes() int64 {
	if d.auditLog == "" {
		return -1
	}
	fi, err := os.Stat(d.auditLog)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0
	case err != nil:
		return -1
	}
	return fi.Size()
}

// steal reads the hypervisor's steal from the measured CPUs: the proxy's,
// or for the direct flavor the backend's when it has its own process.
// StealSeconds implements target.StealReader.
func (d *deployed) StealSeconds() float64 { return d.steal() }

func (d *deployed) steal() float64 {
	cpus := d.local.opts.ProxyCPUs
	if d.envoy == nil && d.nginx == nil {
		if d.backend.cpuSeconds() < 0 {
			return -1
		}
		cpus = d.local.opts.BackendCPUs
	}
	s, err := procstat.StealSeconds(cpus)
	if err != nil {
		return -1
	}
	return s
}

func (d *deployed) Restarted() bool {
	return d.envoy != nil && d.envoy.Exited() || d.nginx != nil && d.nginx.Restarted()
}

func (d *deployed) Teardown() error {
	var errs []error
	if d.envoy != nil {
		errs = append(errs, d.envoy.Stop())
	}
	if d.nginx != nil {
		errs = append(errs, d.nginx.Stop())
	}
	errs = append(errs, d.backend.stop())
	return errors.Join(errs...)
}

// runningBackend is the backend in either of its two forms.
type runningBackend interface {
	addr() string
	port() int
	cpuSeconds() float64 // negative when not measurable apart
	requests() (int64, error)
	stop() error
}

// inProcessBackend runs inside this process; its log (logDir's
// backend.log) holds only the summary it writes when stopped, as the
// backend process's does.
type inProcessBackend struct {
	s      *backend.Server
	logDir string
}

// BackendRecent is what last reached the backend of a deployment of this
// target (backend.Server.Recent), when the backend runs inside this
// process (no Options.BackendCommand); false otherwise. Tests use it to
// prove that a blocked request never reached the origin.
func BackendRecent(d target.Deployed) ([]backend.RequestRecord, bool) {
	dep, ok := d.(*deployed)
	if !ok {
		return nil, false
	}
	b, ok := dep.backend.(inProcessBackend)
	if !ok {
		return nil, false
	}
	return b.s.Recent(), true
}

func (b inProcessBackend) addr() string        { return b.s.Addr() }
func (b inProcessBackend) port() int           { return b.s.Port() }
func (b inProcessBackend) cpuSeconds() float64 { return -1 }
func (b inProcessBackend) requests() (int64, error) {
	return b.s.Stats().Requests, nil
}
func (b inProcessBackend) stop() error {
	err := b.s.Close()
	if b.logDir == "" {
		return err
	}
	log := filepath.Join(b.logDir, "backend.log")
	return errors.Join(err, os.WriteFile(log, []byte(b.s.Stats().Summary()), 0o644))
}

// startBackend starts the backend: behind a proxy an HTTP/1.1 origin in
// clear; for the direct flavor the edge itself, over the deployment's
// transport.
func (l *Local) startBackend(ctx context.Context, d target.Deployment) (runningBackend, error) {
	o := backend.Options{Cost: l.opts.BackendCost}
	if d.Config.Flavor == plan.FlavorDirect {
		o.HTTP2 = d.HTTP2()
		if d.TLS != nil {
			o.CertFile, o.KeyFile = d.TLS.Cert, d.TLS.Key
		}
	}
	if len(l.opts.BackendCommand) == 0 {
		s, err := backend.StartWith("127.0.0.1:0", o)
		if err != nil {
			return nil, err
		}
		return inProcessBackend{s, d.RunDir}, nil
	}
	return startBackendProcess(ctx, backendCommand(l.opts.BackendCommand, o), l.opts.BackendCPUs, d.RunDir)
}

// backendCommand is the backend's command line for o (see backend.Main).
func backendCommand(base []string, o backend.Options) []string {
	command := slices.Clone(base)
	if !o.Cost.IsZero() {
		command = append(command, "--cpu-per-request", o.Cost.CPU.String(), "--sleep-per-request", o.Cost.Sleep.String())
	}
	if o.HTTP2 {
		command = append(command, "--http2")
	}
	if o.CertFile != "" {
		command = append(command, "--tls-cert", o.CertFile, "--tls-key", o.KeyFile)
	}
	return command
}
