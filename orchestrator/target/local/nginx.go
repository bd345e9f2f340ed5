package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"

	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/modsecrules"
	"github.com/wafsweep/wafsweep/orchestrator/nginxconfig"
	"github.com/wafsweep/wafsweep/orchestrator/nginxproc"
	"github.com/wafsweep/wafsweep/orchestrator/target"
)

// nginxInstallation is Options.Nginx, or what nginxconfig.Find finds.
func (l *Local) nginxInstallation() (nginxconfig.Installation, error) {
	if l.opts.Nginx == (nginxconfig.Installation{}) {
		return nginxconfig.Find()
	}
	return l.opts.Nginx, l.opts.Nginx.Check()
}

// startNginx deploys the nginx-modsecurity flavor: the tier's corazawaf
// filter configuration translated for ModSecurity (same CRS files,
// extracted into the run directory), an nginx.conf checked by `nginx -t`,
// and nginx pinned to the proxy CPUs with one worker per CPU.
func (d *deployed) startNginx(ctx context.Context, dep target.Deployment) error {
	inst, err := d.local.nginxInstallation()
	if err != nil {
		return err
	}
	if dep.WAFConfigJSON == "" {
		return errors.New("nginx-modsecurity: the deployment has no WAF configuration to translate")
	}
	runDir, err := filepath.Abs(dep.RunDir)
	if err != nil {
		return err
	}
	cfg, err := modsecrules.ParseFilterConfig([]byte(dep.WAFConfigJSON))
	if err != nil {
		return err
	}
	rules, err := modsecrules.Write(filepath.Join(runDir, "modsecurity"), cfg)
	if err != nil {
		return fmt.Errorf("translating tier %s for ModSecurity: %w", dep.Config.Tier, err)
	}
	ports, err := envoyproc.FreePorts(2)
	if err != nil {
		return err
	}
	port, statusPort := ports[0], ports[1]
	workerUser, workerGroup, err := nginxWorkerUser()
	if err != nil {
		return err
	}
	opts := nginxconfig.Options{
		ModulePath: inst.Module, RulesFile: rules.MainFile,
		ListenPort: port, UpstreamPort: d.backend.port(), StatusPort: statusPort,
		CPUs: d.local.opts.ProxyCPUs, RunDir: runDir, User: workerUser, Group: workerGroup,
		HTTP2: dep.HTTP2(),
	}
	if dep.TLS != nil {
		opts.CertFile, opts.KeyFile = dep.TLS.Cert, dep.TLS.Key
	}
	confPath := filepath.Join(runDir, "nginx.conf")
	if err := nginxconfig.Write(confPath, opts); err != nil {
		return err
	}
	if err := inst.Validate(ctx, confPath, opts.ErrorLog()); err != nil {
		return err
	}
	d.nginx, err = nginxproc.Start(ctx, nginxproc.Options{
		Binary: inst.Binary, ConfigPath: confPath, ErrorLog: opts.ErrorLog(), PIDFile: opts.PIDFile(),
		ListenPort: port, Workers: opts.Workers(), CPUs: d.local.opts.ProxyCPUs,
	})
	if err != nil {
		return fmt.Errorf("starting nginx: %w", err)
	}
	d.url = dep.ListenerURL(port)
	d.nginxStatus = nginxproc.NewStatusCounter(statusPort)
	return nil
}

// nginxWorkerUser keeps nginx's workers under the sweep's own identity
// when the sweep runs as root (nginx would switch them to "nobody", who
// can neither write the run directory nor be compared with Envoy, which
// runs as the sweep's user). Off root the directive is meaningless.
func nginxWorkerUser() (name, group string, err error) {
	if os.Geteuid() != 0 {
		return "", "", nil
	}
	u, err := user.Current()
	if err != nil {
		return "", "", fmt.Errorf("nginx worker user: %w", err)
	}
	g, err := user.LookupGroupId(u.Gid)
	if err != nil {
		return "", "", fmt.Errorf("nginx worker group: %w", err)
	}
	return u.Username, g.Name, nil
}

// nginxUsage accounts every process of the flavor (the master and its
// workers). What is recorded, since several processes share memory:
//   - CPU: user+system of all members, plus what exited workers used.
//   - RSS now (sampled for the step's peak): the sum of the members'
//     proportional set sizes (PSS), which counts the rule set the master
//     shares copy-on-write with its workers once; plain RSS summed would
//     count it once per process. Sum of RSS where the kernel has no PSS.
//   - Lifetime peak: the sum of the members' VmHWM, an upper bound (each
//     member's peak at its own time, shared pages counted per member).
func (d *deployed) nginxUsage(u target.Usage) (target.Usage, error) {
	tree, err := d.nginx.Usage()
	if err != nil {
		return u, err
	}
	u.ProxyCPUSeconds = tree.CPUSeconds
	u.ProxyRSSBytes = tree.PSSBytes
	if u.ProxyRSSBytes == 0 {
		u.ProxyRSSBytes = tree.RSSBytes
	}
	u.ProxyPeakRSSBytes = tree.PeakRSSBytes
	u.ProxyWrittenBytes = tree.WrittenBytes
	return u, nil
}

// nginxNotes are what metadata.json records about the nginx-modsecurity
// flavor: the versions, where its rules come from and how it is accounted.
func nginxNotes(configured nginxconfig.Installation) []string {
	inst := configured
	if inst == (nginxconfig.Installation{}) {
		inst, _ = nginxconfig.Find()
	}
	return []string{
		fmt.Sprintf("nginx-modsecurity: %s, libmodsecurity3 %s, connector %s; one worker per proxy CPU, each pinned",
			inst.Version(), nginxconfig.ModSecurityVersion(), inst.Module),
		fmt.Sprintf("nginx-modsecurity: rules are the tier files with CRS %s extracted from coraza-coreruleset (as in the module), translated for ModSecurity (runs/.../modsecurity/modsecurity.conf lists what was dropped)",
			modsecrules.CRSVersion()),
		"nginx-modsecurity: proxy CPU sums master and workers; proxy RSS is the sum of their PSS (shared pages once); lifetime peak is the sum of their VmHWM, an upper bound",
	}
}
