package childproc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func TestStartPinsAndTerminates(t *testing.T) {
	cpus := []int{runtime.NumCPU() - 1}
	c, err := Start(exec.Command("sleep", "30"), cpus)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Affinity(c.PID())
	if err != nil || len(got) != 1 || got[0] != cpus[0] {
		t.Fatalf("affinity %v %v, want %v", got, err, cpus)
	}
	if c.Exited() {
		t.Fatal("exited at once")
	}
	err = c.Terminate(syscall.SIGTERM, 5*time.Second)
	if err == nil || !c.Exited() {
		t.Fatalf("sleep killed by SIGTERM must report an unclean exit: %v", err)
	}
	if err := c.Terminate(syscall.SIGTERM, time.Second); err != nil {
		t.Fatalf("second Terminate: %v", err)
	}
}

func TestTerminateKillsAChildIgnoringTheSignal(t *testing.T) {
	c, err := Start(exec.Command("sh", "-c", "trap '' TERM; sleep 30"), nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the shell install its trap
	err = c.Terminate(syscall.SIGTERM, 200*time.Millisecond)
	if !errors.Is(err, ErrKilled) {
		t.Fatalf("error %v, want ErrKilled", err)
	}
}

func TestStartFailure(t *testing.T) {
	if _, err := Start(exec.Command("/nonexistent/binary"), nil); err == nil {
		t.Fatal("starting a missing binary must fail")
	}
	if _, err := Start(exec.Command("true"), []int{maxCPU - 1}); err == nil && runtime.NumCPU() < maxCPU {
		t.Fatal("pinning to a CPU that does not exist must fail")
	}
}

func TestTailFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	os.WriteFile(path, []byte("a\nb\nc\n"), 0o644)
	tests := []struct {
		n    int
		want string
	}{{1, "c"}, {2, "b\nc"}, {10, "a\nb\nc"}}
	for _, tt := range tests {
		if got, err := TailFile(path, tt.n); err != nil || got != tt.want {
			t.Errorf("TailFile(%d) = %q, %v", tt.n, got, err)
		}
	}
	if _, err := TailFile(path+".missing", 1); err == nil {
		t.Fatal("missing file")
	}
}
