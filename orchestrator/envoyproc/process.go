package envoyproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// readyPollInterval is how often Start asks /ready; short because start-up
// time is part of every sweep step.
const readyPollInterval = 50 * time.Millisecond

// startupLogLines is how much of Envoy's log a start-up error quotes.
const startupLogLines = 20

// Process is a running (or exited) Envoy started by Start.
type Process struct {
	opts      Options
	cmd       *exec.Cmd
	admin     *adminClient
	startedAt time.Time
	done      chan struct{} // closed when the process has been reaped
	waitErr   error         // valid once done is closed
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
	p := &Process{
		opts:  opts,
		cmd:   cmd,
		admin: newAdminClient(opts.AdminPort),
		done:  make(chan struct{}),
	}
	p.startedAt = time.Now()
	if err := startOnOwnThread(cmd, opts.CPUs, p.reaped); err != nil {
		return nil, fmt.Errorf("envoyproc: start %s: %w", opts.Binary, err)
	}
	return p, nil
}

func (p *Process) reaped(err error) {
	p.waitErr = err
	close(p.done)
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
		case <-p.done:
			return fmt.Errorf("envoyproc: envoy exited during start-up (%v); log %s ends:\n%s",
				p.waitErr, p.opts.LogPath, p.logTailOrError(startupLogLines))
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
	got, err := Affinity(p.PID())
	if err != nil {
		return err
	}
	if !sameCPUs(got, p.opts.CPUs) {
		return fmt.Errorf("envoyproc: envoy pid %d runs on CPUs %v, want %v", p.PID(), got, p.opts.CPUs)
	}
	return nil
}

// PID is Envoy's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// StartedAt is when the process was launched.
func (p *Process) StartedAt() time.Time { return p.startedAt }

// AdminPort is the admin port this process answers on.
func (p *Process) AdminPort() int { return p.opts.AdminPort }

// LogPath is the file holding Envoy's output.
func (p *Process) LogPath() string { return p.opts.LogPath }

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ExitError is the process's wait error once it has exited (nil for exit
// status 0, as after a clean SIGTERM), and nil while it runs.
func (p *Process) ExitError() error {
	if !p.Exited() {
		return nil
	}
	return p.waitErr
}

// Stop sends SIGTERM to this Envoy only, waits up to StopGrace for it to
// exit and then sends SIGKILL. It is safe to call more than once and after
// the process exited by itself. The error reports an unclean exit.
func (p *Process) Stop() error {
	defer p.admin.close()
	if p.Exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("envoyproc: SIGTERM pid %d: %w", p.PID(), err)
	}
	timer := time.NewTimer(p.opts.StopGrace)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.cleanExit()
	case <-timer.C:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("envoyproc: envoy pid %d ignored SIGTERM for %s and was killed", p.PID(), p.opts.StopGrace)
}

func (p *Process) cleanExit() error {
	if p.waitErr != nil {
		return fmt.Errorf("envoyproc: envoy pid %d exited uncleanly: %w", p.PID(), p.waitErr)
	}
	return nil
}

// LogTail returns up to the last n lines of Envoy's output.
func (p *Process) LogTail(n int) (string, error) {
	return tailFile(p.opts.LogPath, n)
}

func (p *Process) logTailOrError(n int) string {
	tail, err := p.LogTail(n)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	return tail
}

// tailWindow bounds how much of a log LogTail reads: debug logs grow large.
const tailWindow = 1 << 20

func tailFile(path string, n int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("envoyproc: read log: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("envoyproc: read log: %w", err)
	}
	offset := max(info.Size()-tailWindow, 0)
	buf := make([]byte, info.Size()-offset)
	if _, err := f.ReadAt(buf, offset); err != nil {
		return "", fmt.Errorf("envoyproc: read log: %w", err)
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n"), nil
}
