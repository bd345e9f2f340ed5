// Package childproc starts the processes a sweep measures (Envoy, nginx)
// pinned to their CPUs from birth, reaps them, and stops them by their own
// PID. The proxies' packages (envoyproc, nginxproc) add what is particular to
// each: readiness, admin interfaces, worker bookkeeping.
package childproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// Child is a started process.
type Child struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has been reaped
	waitErr error         // valid once done is closed
}

// Start starts cmd from a dedicated, locked OS thread and reaps it there.
// The thread matters twice:
//   - CPU pinning: the child inherits the forking thread's mask from birth.
//     Setting it on the child afterwards would race with the child starting
//     its own workers, which inherit the mask of their creator.
//   - Pdeathsig (set by the caller in cmd.SysProcAttr) fires when the forking
//     *thread* exits, so that thread lives exactly as long as the child. It is
//     never unlocked, so the runtime discards it (and its mask) afterwards.
func Start(cmd *exec.Cmd, cpus []int) (*Child, error) {
	c := &Child{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if len(cpus) > 0 {
			if err := procstat.PinThread(cpus); err != nil {
				started <- err
				return
			}
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// PID is the child's process id.
func (c *Child) PID() int { return c.cmd.Process.Pid }

// Done is closed once the child has exited and been reaped.
func (c *Child) Done() <-chan struct{} { return c.done }

// Exited reports whether the child has exited.
func (c *Child) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// ExitError is the child's wait error once it has exited (nil for a clean
// exit), and nil while it runs.
func (c *Child) ExitError() error {
	if !c.Exited() {
		return nil
	}
	return c.waitErr
}

// ErrKilled says the child ignored the polite signal and was killed.
var ErrKilled = errors.New("did not stop in time and was killed")

// Terminate sends sig to the child (only to it, by its PID), waits up to
// grace, then SIGKILLs it. It returns ErrKilled (wrapped) when the grace
// ran out, the child's exit error otherwise, and nil for a child that had
// already exited. Safe to call more than once.
func (c *Child) Terminate(sig syscall.Signal, grace time.Duration) error {
	if c.Exited() {
		return nil
	}
	if err := c.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal pid %d: %w", c.PID(), err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-c.done:
		if c.waitErr != nil {
			return fmt.Errorf("pid %d exited uncleanly: %w", c.PID(), c.waitErr)
		}
		return nil
	case <-timer.C:
	}
	_ = c.cmd.Process.Kill()
	<-c.done
	return fmt.Errorf("pid %d %w after %s", c.PID(), ErrKilled, grace)
}

// maxCPU is the number of CPUs a unix.CPUSet can name.
const maxCPU = len(unix.CPUSet{}) * 64

// ValidCPU reports whether a CPU number fits a CPU set.
func ValidCPU(c int) bool { return c >= 0 && c < maxCPU }

// Affinity returns the CPUs the process with this pid may run on.
func Affinity(pid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return nil, fmt.Errorf("CPU affinity of pid %d: %w", pid, err)
	}
	var cpus []int
	for c := range maxCPU {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// tailWindow bounds how much of a log TailFile reads: debug logs grow large.
const tailWindow = 1 << 20

// TailFile returns up to the last n lines of a log file.
func TailFile(path string, n int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read log: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read log: %w", err)
	}
	offset := max(info.Size()-tailWindow, 0)
	buf := make([]byte, info.Size()-offset)
	if _, err := f.ReadAt(buf, offset); err != nil {
		return "", fmt.Errorf("read log: %w", err)
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n"), nil
}
