package cgroup

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const (
	podUID      = "6f1c2d3e-aaaa-bbbb-cccc-0123456789ab"
	containerID = "c0ffee1234"
)

// The layouts a node may have: cgroup v2 with the systemd driver (GKE,
// kind), v1 with cgroupfs and cpuacct co-mounted or alone (the test node).
func TestReadLayouts(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, root string)
		want  Sample
	}{
		{"v2 systemd", func(t *testing.T, root string) {
			write(t, root, map[string]string{"cgroup.controllers": "cpuset cpu memory"})
			// A burstable pod's other container must not be picked up.
			write(t, filepath.Join(root, "kubepods.slice", "kubepods-burstable.slice", "kubepods-burstable-podother.slice", "cri-containerd-"+containerID+".scope"), map[string]string{"cpu.stat": "usage_usec 1\n"})
			write(t, filepath.Join(root, "kubepods.slice", "kubepods-pod6f1c2d3e_aaaa_bbbb_cccc_0123456789ab.slice", "cri-containerd-"+containerID+".scope"), map[string]string{
				"cpu.stat":              "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 100\nnr_throttled 7\nthrottled_usec 350000\n",
				"memory.current":        "104857600\n",
				"memory.stat":           "anon 80000000\ninactive_file 4857600\n",
				"memory.peak":           "209715200\n",
				"cpuset.cpus.effective": "2-3\n",
			})
		}, Sample{CPUSeconds: 2.5, MemoryBytes: 100000000, MemoryPeakBytes: 209715200, CPUs: "2-3", ThrottledPeriods: 7, ThrottledSeconds: 0.35}},
		{"v1 cgroupfs, separate cpuacct", func(t *testing.T, root string) {
			base := filepath.Join("kubepods", "pod"+podUID, containerID)
			write(t, filepath.Join(root, "cpuacct", base), map[string]string{"cpuacct.usage": "1500000000\n"})
			write(t, filepath.Join(root, "memory", base), map[string]string{
				"memory.usage_in_bytes": "50000000\n", "memory.stat": "cache 100\ntotal_inactive_file 10000000\n",
				"memory.max_usage_in_bytes": "60000000\n",
			})
			write(t, filepath.Join(root, "cpuset", base), map[string]string{"cpuset.cpus": "1\n", "cpuset.effective_cpus": "1\n"})
		}, Sample{CPUSeconds: 1.5, MemoryBytes: 40000000, MemoryPeakBytes: 60000000, CPUs: "1"}},
		{"v1 co-mounted cpu,cpuacct, no peak file", func(t *testing.T, root string) {
			base := filepath.Join("kubepods", "pod"+podUID, containerID)
			write(t, filepath.Join(root, "cpu,cpuacct", base), map[string]string{"cpuacct.usage": "1000000000\n", "cpu.stat": "nr_periods 9\nnr_throttled 3\nthrottled_time 125000000\n"})
			write(t, filepath.Join(root, "memory", base), map[string]string{"memory.usage_in_bytes": "1000\n", "memory.stat": "total_inactive_file 0\n"})
			write(t, filepath.Join(root, "cpuset", base), map[string]string{"cpuset.cpus": "0-1\n"})
		}, Sample{CPUSeconds: 1, MemoryBytes: 1000, CPUs: "0-1", ThrottledPeriods: 3, ThrottledSeconds: 0.125}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			c.setup(t, root)
			got, err := (&Reader{Root: root}).Read(podUID, containerID)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("read %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestReadUnknownContainer(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"cgroup.controllers": "cpu"})
	if _, err := (&Reader{Root: root}).Read(podUID, "nothere"); err == nil {
		t.Fatal("a container without a cgroup was read")
	}
}

// The agent's HTTP API and its client, end to end.
func TestAgentRoundTrip(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"cgroup.controllers": "cpu"})
	write(t, filepath.Join(root, "kubepods", "pod"+podUID, containerID), map[string]string{
		"cpu.stat": "usage_usec 1000000\n", "memory.current": "10\n", "memory.stat": "inactive_file 0\n", "cpuset.cpus.effective": "3\n",
	})
	srv := httptest.NewServer(Handler(&Reader{Root: root}, func() (string, error) { return "0-1", nil }))
	defer srv.Close()
	r, err := Client{BaseURL: srv.URL}.Read(context.Background(), podUID, containerID)
	if err != nil {
		t.Fatal(err)
	}
	if r.CPUSeconds != 1 || r.CPUs != "3" || r.SharedCPUs != "0-1" {
		t.Fatalf("reading %+v", r)
	}
	if _, err := (Client{BaseURL: srv.URL}).Read(context.Background(), podUID, "other"); err == nil {
		t.Fatal("an unknown container read without error")
	}
	// The node's processor, as /proc/cpuinfo names it where the agent runs.
	cpu, err := Client{BaseURL: srv.URL}.CPU(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if model, cpus := procstat.CPUInfo(); cpu.Model != model || cpu.CPUs != cpus || cpus < 1 {
		t.Errorf("node CPU %+v, want %q x %d", cpu, model, cpus)
	}
}

func TestExclusive(t *testing.T) {
	cases := []struct {
		cpus, shared string
		cores        int
		want         bool
	}{
		{"2-3", "0-1", 2, true},
		{"1", "0", 1, true},
		{"0-3", "0-3", 2, false}, // CPU manager policy none: everything shared
		{"1-2", "0-1", 2, false}, // overlaps the shared pool
		{"2", "0-1", 2, false},   // fewer CPUs than asked for
	}
	for _, c := range cases {
		got, why, err := Exclusive(c.cpus, c.shared, c.cores)
		if err != nil || got != c.want || (!got && why == "") {
			t.Errorf("Exclusive(%s, %s, %d) = %v %q %v, want %v", c.cpus, c.shared, c.cores, got, why, err, c.want)
		}
	}
}

// The agent reads a container's writes through the processes its cgroup
// lists: their write_bytes summed, and a file's size as they see it. Here
// the "container" is this test's own process, which writes a file of known
// size; PIDs of another namespace (0) read as not measured, and a path
// that is not clean and absolute is refused.
func TestAgentReadsWritesThroughTheProcesses(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"cgroup.controllers": "cpu"})
	dir := filepath.Join(root, "kubepods", "pod"+podUID, containerID)
	files := map[string]string{
		"cpu.stat": "usage_usec 1\n", "memory.current": "10\n", "memory.stat": "inactive_file 0\n", "cpuset.cpus.effective": "3\n",
		"cgroup.procs": fmt.Sprintf("%d\n", os.Getpid()),
	}
	write(t, dir, files)
	log := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(log, make([]byte, 12345), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(&Reader{Root: root}, func() (string, error) { return "0-1", nil }))
	defer srv.Close()
	c := Client{BaseURL: srv.URL}
	r, err := c.ReadWithFile(context.Background(), podUID, containerID, log)
	if err != nil {
		t.Fatal(err)
	}
	own, err := procstat.WrittenBytes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if r.FileBytes != 12345 || r.WrittenBytes < 0 || r.WrittenBytes > own {
		t.Errorf("writes %+v, want the file's 12345 bytes and at most this process's %d written", r.Writes, own)
	}
	if r, err := c.Read(context.Background(), podUID, containerID); err != nil || r.FileBytes != -1 {
		t.Errorf("no file asked: %+v %v, want its size not measured", r.Writes, err)
	}
	if _, err := c.ReadWithFile(context.Background(), podUID, containerID, "/var/log/../../etc/shadow"); err == nil {
		t.Error("an unclean path was read")
	}
	files["cgroup.procs"] = "0\n0\n"
	write(t, dir, files)
	if r, err := c.ReadWithFile(context.Background(), podUID, containerID, log); err != nil || r.WrittenBytes != -1 || r.FileBytes != -1 {
		t.Errorf("processes of another PID namespace: %+v %v, want both not measured", r.Writes, err)
	}
}
