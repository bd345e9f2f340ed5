package envoyproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/childproc"
)

// readyPollInterval is how often Start asks /ready; short because start-up
// time is part of every sweep step.
const readyPollInterval = 50 * time.Millisecond

// startupLogLines is how much of Envoy's log a start-up error quotes.
const startupLogLines = 20

// Process is a running (or exited) Envoy started by Start.
type Process struct {
	*childproc.Child
	opts      Options
	admin     *Admin
	startedAt time.Time
}

// Start launches Envoy and waits until its admin /ready answers 200. If
// Envoy exits first (e.g. it rejected the config) or the wait times out, the
// error quotes the end of Envoy's log and no process is left running.
// ctx bounds only the start-up wait, not the process's life: use Stop.
func Start(ctx context.Context, opts Options) (*Process, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("envoyproc: invalid options: %w", err)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	p, err := launch(opts)
	if err != nil {
		return nil, err
	}
	if err := p.waitReady(ctx); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

func launch(opts Options) (*Process, error) {
	logFile, err := os.OpenFile(opts.LogPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("envoyproc: open Envoy log: %w", err)
	}
	// The child holds its own descriptor; ours is not needed after start.
	defer logFile.Close()

	cmd := exec.Command(opts.Binary, opts.args()...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), opts.Env...)
	// If this process dies without calling Stop (a test binary killed on
	// timeout, a crashed sweep), the kernel kills Envoy rather than leaving
	// it holding ports and CPU.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &Process{opts: opts, admin: newAdminClient(opts.AdminPort), startedAt: time.Now()}
	if p.Child, err = childproc.Start(cmd, opts.CPUs); err != nil {
		return nil, fmt.Errorf("envoyproc: start %s: %w", opts.Binary, err)
	}
	return p, nil
}

func (p *Process) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	ticker := time.NewTicker(readyPollInterval)
	defer ticker.Stop()
	for {
		if p.admin.ready(ctx) {
			return p.checkIdentity(ctx)
		}
		select {
		case <-p.Done():
			return fmt.Errorf("envoyproc: envoy exited during start-up (%v); log %s ends:\n%s",
				p.ExitError(), p.opts.LogPath, p.logTailOrError(startupLogLines))
		case <-ctx.Done():
			return fmt.Errorf("envoyproc: envoy not ready on admin port %d: %w; log %s ends:\n%s",
				p.opts.AdminPort, ctx.Err(), p.opts.LogPath, p.logTailOrError(startupLogLines))
		case <-ticker.C:
		}
	}
}

// checkIdentity makes sure the Envoy answering is ours and pinned as asked.
// Another Envoy already on the admin port (a port-allocation race) would
// otherwise pass for ours while ours fails to bind and exits.
func (p *Process) checkIdentity(ctx context.Context) error {
	info, err := p.ServerInfo(ctx)
	if err != nil {
		return err
	}
	if info.ConfigPath != p.opts.ConfigPath {
		return fmt.Errorf("envoyproc: admin port %d answers for another Envoy (config %q, ours %q)",
			p.opts.AdminPort, info.ConfigPath, p.opts.ConfigPath)
	}
	return p.checkAffinity()
}

// checkAffinity confirms the pinning took, since a silently unpinned proxy
// would skew every CPU measurement.
func (p *Process) checkAffinity() error {
	if len(p.opts.CPUs) == 0 {
		return nil
	}
	got, err := childproc.Affinity(p.PID())
	if err != nil {
		return err
	}
	if !sameCPUs(got, p.opts.CPUs) {
		return fmt.Errorf("envoyproc: envoy pid %d runs on CPUs %v, want %v", p.PID(), got, p.opts.CPUs)
	}
	return nil
}

// StartedAt is when the process was launched.
func (p *Process) StartedAt() time.Time { return p.startedAt }

// AdminPort is the admin port this process answers on.
func (p *Process) AdminPort() int { return p.opts.AdminPort }

// LogPath is the file holding Envoy's output.
func (p *Process) LogPath() string { return p.opts.LogPath }

// Stop sends SIGTERM to this Envoy only, waits up to StopGrace for it to
// exit and then sends SIGKILL. It is safe to call more than once and after
// the process exited by itself. The error reports an unclean exit.
func (p *Process) Stop() error {
	defer p.admin.Close()
	if err := p.Terminate(syscall.SIGTERM, p.opts.StopGrace); err != nil {
		return fmt.Errorf("envoyproc: envoy: %w", err)
	}
	return nil
}

// LogTail returns up to the last n lines of Envoy's output.
func (p *Process) LogTail(n int) (string, error) {
	return childproc.TailFile(p.opts.LogPath, n)
}

func (p *Process) logTailOrError(n int) string {
	tail, err := p.LogTail(n)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	return tail
}
