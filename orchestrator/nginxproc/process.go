// Package nginxproc starts, watches and stops a real nginx (a master and
// its workers) on 127.0.0.1, pinned to the proxy's CPUs, and accounts all
// its processes.
package nginxproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/childproc"
	"github.com/wafsweep/wafsweep/orchestrator/nginxconfig"
	"github.com/wafsweep/wafsweep/orchestrator/proctree"
)

// Default values used when the matching Options field is zero.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultStopGrace    = 10 * time.Second
)

// Options describes one nginx process tree.
type Options struct {
	// Binary is nginx; empty means nginxconfig.Find().
	Binary     string
	ConfigPath string
	// ErrorLog is nginx's -e and should be the configuration's error_log:
	// start-up errors are quoted from it. nginx's stdout and stderr are
	// appended to it too.
	ErrorLog string
	// PIDFile is the configuration's pid file: readiness requires it to
	// hold our master's pid, so another nginx answering on the port is not
	// taken for ours.
	PIDFile    string
	ListenPort int
	// Workers is the configuration's worker_processes: start-up waits for
	// all of them.
	Workers int
	// CPUs, if set, pins the master from birth; the workers inherit the
	// mask (and worker_cpu_affinity may narrow each to one of these CPUs).
	CPUs         []int
	StartTimeout time.Duration
	StopGrace    time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Binary == "" {
		inst, err := nginxconfig.Find()
		if err != nil {
			return o, err
		}
		o.Binary = inst.Binary
	}
	if o.Workers == 0 {
		o.Workers = 1
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StopGrace == 0 {
		o.StopGrace = DefaultStopGrace
	}
	return o, nil
}

func (o Options) validate() error {
	var errs []error
	if o.ConfigPath == "" || o.ErrorLog == "" || o.PIDFile == "" {
		errs = append(errs, errors.New("ConfigPath, ErrorLog and PIDFile are required"))
	}
	if o.ListenPort < 1 || o.ListenPort > 65535 {
		errs = append(errs, fmt.Errorf("ListenPort %d out of range 1-65535", o.ListenPort))
	}
	if o.Workers < 0 || o.StartTimeout < 0 || o.StopGrace < 0 {
		errs = append(errs, errors.New("Workers, StartTimeout and StopGrace must not be negative"))
	}
	for _, c := range o.CPUs {
		if !childproc.ValidCPU(c) {
			errs = append(errs, fmt.Errorf("CPU %d out of range", c))
		}
	}
	return errors.Join(errs...)
}

// Process is a running (or exited) nginx started by Start.
type Process struct {
	*childproc.Child // the master
	opts             Options
	// workers are the workers seen ready at start: one that is gone later
	// crashed and was replaced, which the sweep counts as a restart.
	workers []identity
}

// identity names a process across pid reuse.
type identity struct {
	pid        int
	startTicks uint64
}

func (id identity) alive() bool {
	st, err := proctree.ReadStat(id.pid)
	return err == nil && st.StartTicks == id.startTicks && st.State != "Z"
}

// launch starts the master. Pdeathsig is SIGTERM, not SIGKILL as for
// Envoy: a master killed outright leaves its workers running, holding the
// port and the CPUs, while SIGTERM is nginx's fast shutdown, in which the
// master stops its workers (and SIGKILLs them itself after a second).
func launch(opts Options) (*Process, error) {
	out, err := os.OpenFile(opts.ErrorLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("nginxproc: open the error log: %w", err)
	}
	defer out.Close() // the child holds its own descriptor
	cmd := exec.Command(opts.Binary, nginxconfig.RunArgs(opts.ConfigPath, opts.ErrorLog)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	p := &Process{opts: opts}
	if p.Child, err = childproc.Start(cmd, opts.CPUs); err != nil {
		return nil, fmt.Errorf("nginxproc: start %s: %w", opts.Binary, err)
	}
	return p, nil
}

// Restarted reports whether the master exited or one of the workers it
// started with is gone (nginx replaces a crashed worker silently).
func (p *Process) Restarted() bool {
	if p.Exited() {
		return true
	}
	for _, w := range p.workers {
		if !w.alive() {
			return true
		}
	}
	return false
}

// Usage samples the master and all its workers.
func (p *Process) Usage() (proctree.Usage, error) {
	return proctree.Read(p.PID())
}

// Stop ends nginx by its master's pid: SIGTERM (fast shutdown: the master
// stops its workers), then after StopGrace SIGKILL to the master and to each
// worker, which a killed master would leave behind. Safe to call more than
// once and after nginx exited by itself; the error reports an unclean exit.
func (p *Process) Stop() error {
	leftovers := p.currentWorkers()
	err := p.Terminate(syscall.SIGTERM, p.opts.StopGrace)
	if errors.Is(err, childproc.ErrKilled) {
		for _, w := range leftovers {
			if w.alive() {
				_ = syscall.Kill(w.pid, syscall.SIGKILL)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("nginxproc: nginx master: %w", err)
	}
	return nil
}

// currentWorkers identifies the master's children now.
func (p *Process) currentWorkers() []identity {
	kids, err := proctree.Children(p.PID())
	if err != nil {
		return nil
	}
	var ids []identity
	for _, k := range kids {
		if st, err := proctree.ReadStat(k); err == nil {
			ids = append(ids, identity{pid: k, startTicks: st.StartTicks})
		}
	}
	return ids
}

// LogTail returns up to the last n lines of the error log.
func (p *Process) LogTail(n int) string {
	tail, err := childproc.TailFile(p.opts.ErrorLog, n)
	if err != nil {
		return fmt.Sprintf("(error log unreadable: %v)", err)
	}
	return tail
}

// sameOrSubset reports whether every CPU of got is in want.
func sameOrSubset(got, want []int) bool {
	for _, c := range got {
		if !slices.Contains(want, c) {
			return false
		}
	}
	return len(got) > 0
}
