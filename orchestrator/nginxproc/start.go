package nginxproc

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/childproc"
	"github.com/wafsweep/wafsweep/orchestrator/proctree"
)

// readyPollInterval is short because start-up time is part of every sweep
// configuration.
const readyPollInterval = 20 * time.Millisecond

// startupLogLines is how much of the error log a start-up error quotes.
const startupLogLines = 20

// Start launches nginx and waits until it is ready: the pid file names our
// master, all workers are up, and the port accepts connections. Then it
// checks every process runs on the given CPUs. If nginx exits first (a
// rejected configuration, a port in use) or the wait times out, the error
// quotes the end of the error log and nothing is left running. ctx bounds
// only the start-up wait.
func Start(ctx context.Context, opts Options) (*Process, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("nginxproc: invalid options: %w", err)
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

func (p *Process) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	ticker := time.NewTicker(readyPollInterval)
	defer ticker.Stop()
	for {
		if p.ready() {
			p.workers = p.currentWorkers()
			return p.checkAffinity()
		}
		select {
		case <-p.Done():
			return fmt.Errorf("nginxproc: nginx exited during start-up (%v); %s ends:\n%s",
				p.ExitError(), p.opts.ErrorLog, p.LogTail(startupLogLines))
		case <-ctx.Done():
			return fmt.Errorf("nginxproc: nginx not ready on 127.0.0.1:%d with %d workers: %w; %s ends:\n%s",
				p.opts.ListenPort, p.opts.Workers, ctx.Err(), p.opts.ErrorLog, p.LogTail(startupLogLines))
		case <-ticker.C:
		}
	}
}

func (p *Process) ready() bool {
	raw, err := os.ReadFile(p.opts.PIDFile)
	if err != nil {
		return false
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err != nil || pid != p.PID() {
		return false
	}
	kids, err := proctree.Children(p.PID())
	if err != nil || len(kids) < p.opts.Workers {
		return false
	}
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p.opts.ListenPort), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// checkAffinity confirms the pinning reached every process: a worker
// running elsewhere would skew every CPU measurement.
func (p *Process) checkAffinity() error {
	if len(p.opts.CPUs) == 0 {
		return nil
	}
	members, err := proctree.Members(p.PID())
	if err != nil {
		return fmt.Errorf("nginxproc: %w", err)
	}
	for _, pid := range members {
		cpus, err := childproc.Affinity(pid)
		if err != nil {
			return err
		}
		if !sameOrSubset(cpus, p.opts.CPUs) {
			return fmt.Errorf("nginxproc: nginx process %d runs on CPUs %v, want within %v", pid, cpus, p.opts.CPUs)
		}
	}
	return nil
}
