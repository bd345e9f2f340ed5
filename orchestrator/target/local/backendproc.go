package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// backendProcess is the backend as its own process, pinned to its CPUs so
// its cost can be accounted apart from the load generator's.
type backendProcess struct {
	cmd      *exec.Cmd
	address  string
	stats    string // its stats listener, http://ADDR
	portNum  int
	waitDone chan struct{}
}

// startBackendProcess runs command with --listen 127.0.0.1:0 and
// --stats-listen 127.0.0.1:0 and waits for its "listening on ADDR" and
// "stats on ADDR" lines.
func startBackendProcess(ctx context.Context, command []string, cpus []int, runDir string) (*backendProcess, error) {
	args := append(append([]string(nil), command[1:]...), "--listen", "127.0.0.1:0", "--stats-listen", "127.0.0.1:0")
	cmd := exec.Command(command[0], args...)
	// The backend dies with the sweep, even on SIGKILL.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// The process is pinned after it starts, too late for the Go runtime
	// to size itself by its CPUs: idle Ps spinning for work on the one
	// CPU the backend has would be charged to every request.
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(max(len(cpus), 1)))
	logFile, err := os.Create(filepath.Join(runDir, "backend.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", command[0], err)
	}
	b := &backendProcess{cmd: cmd, waitDone: make(chan struct{})}
	addrs := make(chan [2]string, 1)
	go func() {
		var listening, stats string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok && listening == "" {
				listening = strings.TrimSpace(a)
			}
			if a, ok := strings.CutPrefix(sc.Text(), "stats on "); ok {
				stats = strings.TrimSpace(a)
			}
			if listening != "" && stats != "" {
				addrs <- [2]string{listening, stats}
				listening = "" // reported; the rest is drained unread
			}
		}
	}()
	go func() { cmd.Wait(); close(b.waitDone) }()
	select {
	case a := <-addrs:
		b.address, b.stats = a[0], "http://"+a[1]
	case <-b.waitDone:
		return nil, fmt.Errorf("backend exited before listening (see %s)", filepath.Join(runDir, "backend.log"))
	case <-time.After(10 * time.Second):
		b.stop()
		return nil, errors.New("backend did not report its address within 10s")
	case <-ctx.Done():
		b.stop()
		return nil, ctx.Err()
	}
	_, port, err := net.SplitHostPort(b.address)
	if err == nil {
		b.portNum, err = strconv.Atoi(port)
	}
	if err != nil {
		b.stop()
		return nil, fmt.Errorf("backend address %q: %v", b.address, err)
	}
	if err := procstat.PinProcess(cmd.Process.Pid, cpus); err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

func (b *backendProcess) addr() string { return b.address }

// requests reads how many requests the backend has answered, from its
// stats listener.
func (b *backendProcess) requests() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := backend.ReadStats(ctx, b.stats)
	return st.Requests, err
}
func (b *backendProcess) port() int { return b.portNum }

func (b *backendProcess) cpuSeconds() float64 {
	s, err := procstat.CPUSeconds(b.cmd.Process.Pid)
	if err != nil {
		return -1
	}
	return s
}

// stop ends the backend by its PID: SIGTERM, then SIGKILL after 5 s.
func (b *backendProcess) stop() error {
	select {
	case <-b.waitDone:
		return nil
	default:
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.waitDone:
	case <-time.After(5 * time.Second):
		b.cmd.Process.Kill()
		<-b.waitDone
	}
	return nil
}
