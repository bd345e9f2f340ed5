package proctree

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

func TestParseStat(t *testing.T) {
	// 52 fields as the kernel writes them; the name holds spaces and ')'.
	tail := "S 41 42 42 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 123456 1000000 200 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0"
	tests := []struct {
		name    string
		stat    string
		want    Stat
		wantErr string
	}{
		{"plain", "1234 (nginx) " + tail, Stat{PPID: 41, State: "S", UserSys: 3, ChildrenUserSys: 0.1, StartTicks: 123456}, ""},
		{"name with parentheses", "1234 (nginx: worker (x) ) " + tail, Stat{PPID: 41, State: "S", UserSys: 3, ChildrenUserSys: 0.1, StartTicks: 123456}, ""},
		{"no name", "1234 nginx S 1", Stat{}, "malformed"},
		{"short", "1234 (nginx) S 1 2 3", Stat{}, "short"},
		{"not a number", "1234 (nginx) " + strings.Replace(tail, "250", "x", 1), Stat{}, "field 14"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat([]byte(tc.stat))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestKBFields(t *testing.T) {
	status := "Name:\tnginx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t1\n"
	tests := []struct {
		name    string
		text    string
		fields  []string
		want    []uint64
		wantErr string
	}{
		{"in asked order", status, []string{"VmRSS", "VmHWM"}, []uint64{1 << 20, 2 << 20}, ""},
		{"one", "Rss: 8 kB\nPss:   4 kB\n", []string{"Pss"}, []uint64{4 << 10}, ""},
		{"missing", status, []string{"Pss"}, nil, "Pss missing"},
		{"bad value", "Pss: many kB\n", []string{"Pss"}, nil, "bad Pss"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kBFields([]byte(tc.text), tc.fields...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// startTree runs a shell that forks the given children and waits, so the
// test sees a real parent with real children.
func startTree(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if kids, err := Children(cmd.Process.Pid); err == nil {
			for _, k := range kids {
				if p, err := os.FindProcess(k); err == nil {
					p.Kill()
				}
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestMembersAndUsageOfARealTree(t *testing.T) {
	cmd := startTree(t, "sleep 30 & sleep 30 & wait")
	root := cmd.Process.Pid
	var members []int
	waitFor(t, "two children", func() bool {
		var err error
		members, err = Members(root)
		return err == nil && len(members) == 3
	})
	if members[0] != root {
		t.Fatalf("members %v do not start with the root %d", members, root)
	}
	fromTasks, err := childrenFromTasks(root)
	if err != nil {
		t.Skipf("kernel without /proc/<pid>/task/*/children: %v", err)
	}
	fromScan, err := childrenFromScan(root)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(fromTasks)
	slices.Sort(fromScan)
	if !slices.Equal(fromTasks, fromScan) {
		t.Errorf("children files say %v, the /proc scan says %v", fromTasks, fromScan)
	}
	u, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	if u.Processes != 3 || u.RSSBytes == 0 || u.PeakRSSBytes < u.RSSBytes {
		t.Errorf("usage %+v: want 3 processes, RSS > 0 and peak >= RSS", u)
	}
	if u.PSSBytes == 0 || u.PSSBytes > u.RSSBytes {
		t.Errorf("usage %+v: want 0 < PSS <= RSS (shared pages split)", u)
	}
}

// The CPU of a child that exited and was reaped stays in the tree's total
// (an nginx worker replaced by the master must not make CPU go backwards).
func TestCPUOfReapedChildrenIsKept(t *testing.T) {
	done := t.TempDir() + "/done"
	cmd := startTree(t, "(i=0; while [ $i -lt 500000 ]; do i=$((i+1)); done); touch "+done+"; exec sleep 30")
	// The child touches the file just before it exits: wait for both.
	waitFor(t, "the busy child to finish and be reaped", func() bool {
		_, err := os.Stat(done)
		members, merr := Members(cmd.Process.Pid)
		return err == nil && merr == nil && len(members) == 1
	})
	u, err := Read(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if u.Processes != 1 {
		t.Errorf("%d processes, want only the root left", u.Processes)
	}
	if u.CPUSeconds < 0.05 {
		t.Errorf("CPU %.2f s: the reaped child's CPU is missing", u.CPUSeconds)
	}
}

func TestReadOfAGoneProcessFails(t *testing.T) {
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(cmd.Process.Pid); err == nil {
		t.Fatal("Read of an exited, reaped pid succeeded")
	}
}

// What a member writes to a file counts in the tree's WrittenBytes (an
// nginx worker writing ModSecurity's audit log).
func TestWrittenBytesOfARealTree(t *testing.T) {
	dir, err := os.MkdirTemp(".", "written-") // /tmp may be tmpfs, where nothing reaches storage
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if counted, err := procstat.StorageCounted(dir); err != nil || !counted {
		t.Skipf("the test's directory is in memory (%v): nothing reaches storage, write_bytes stays 0", err)
	}
	done := filepath.Join(dir, "done")
	// The subshell writes with a builtin, so the bytes are its own, not
	// those of a child that exits; then it stays alive to be read.
	cmd := startTree(t, fmt.Sprintf(`(i=0; while [ $i -lt 256 ]; do printf '%%01024d' 0; i=$((i+1)); done > %s/f; touch %s; sleep 30) & wait`, dir, done))
	waitFor(t, "the member to finish writing", func() bool { _, err := os.Stat(done); return err == nil })
	u, err := Read(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if u.WrittenBytes < 256<<10 {
		t.Fatalf("tree wrote %d bytes to storage, want >= %d", u.WrittenBytes, 256<<10)
	}
}
