// Package cgroup reads a container's CPU, memory and cpuset from its node's
// cgroup filesystem (v1 or v2, cgroupfs or systemd layout), serves the
// readings over HTTP from an agent pod on the node, and is the client of
// that agent. The agent runs in the shared CPU pool: reading the proxy's
// usage never runs anything on the proxy's exclusive cores, and never
// enters its container.
package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Sample is one reading of a container's cgroup.
type Sample struct {
	// CPUSeconds is the cumulative CPU time of every process of the
	// container.
	CPUSeconds float64 `json:"cpu_seconds"`
	// MemoryBytes is the working set now: usage minus inactive file pages,
	// as the kubelet counts it (page cache that can be dropped is not the
	// proxy's footprint).
	MemoryBytes uint64 `json:"memory_bytes"`
	// MemoryPeakBytes is the lifetime high-water mark of usage, including
	// page cache (memory.peak, memory.max_usage_in_bytes); 0 where the
	// kernel has no such file.
	MemoryPeakBytes uint64 `json:"memory_peak_bytes"`
	// CPUs is the container's cpuset ("2-3").
	CPUs string `json:"cpus"`
	// ThrottledPeriods and ThrottledSeconds are the CFS quota's cumulative
	// throttling (cpu.stat nr_throttled, throttled_usec or, on cgroup v1,
	// throttled_time): a proxy throttled during a step ran out of its CPU
	// limit, not of CPU.
	ThrottledPeriods uint64  `json:"throttled_periods"`
	ThrottledSeconds float64 `json:"throttled_seconds"`
}

// Reader finds and reads container cgroups under Root, the node's
// /sys/fs/cgroup as mounted in the agent.
type Reader struct {
	Root string

	mu    sync.Mutex
	paths map[string]dirs // pod UID + container ID -> directories
}

// dirs are one container's cgroup directories: one for v2, one per
// controller for v1.
type dirs struct {
	v2                    string
	cpuacct, memory, cpus string
}

// V2 reports whether Root is a unified (cgroup v2) hierarchy.
func (r *Reader) V2() bool {
	_, err := os.Stat(filepath.Join(r.Root, "cgroup.controllers"))
	return err == nil
}

// Read samples the container containerID of pod podUID.
func (r *Reader) Read(podUID, containerID string) (Sample, error) {
	d, err := r.find(podUID, containerID)
	if err != nil {
		return Sample{}, err
	}
	s, err := d.read()
	if err != nil {
		// The container may have restarted under a new ID: look again next
		// time.
		r.mu.Lock()
		delete(r.paths, podUID+"/"+containerID)
		r.mu.Unlock()
	}
	return s, err
}

func (r *Reader) find(podUID, containerID string) (dirs, error) {
	key := podUID + "/" + containerID
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.paths[key]; ok {
		return d, nil
	}
	var d dirs
	var err error
	if r.V2() {
		d.v2, err = findContainerDir(r.Root, podUID, containerID)
	} else {
		d.cpuacct, err = findContainerDir(r.controller("cpuacct"), podUID, containerID)
		if err == nil {
			d.memory, err = findContainerDir(r.controller("memory"), podUID, containerID)
		}
		if err == nil {
			d.cpus, err = findContainerDir(r.controller("cpuset"), podUID, containerID)
		}
	}
	if err != nil {
		return dirs{}, err
	}
	if r.paths == nil {
		r.paths = map[string]dirs{}
	}
	r.paths[key] = d
	return d, nil
}

// controller is a v1 controller's hierarchy: cpuacct may be mounted alone
// or co-mounted as cpu,cpuacct.
func (r *Reader) controller(name string) string {
	entries, _ := os.ReadDir(r.Root)
	for _, e := range entries {
		for _, part := range strings.Split(e.Name(), ",") {
			if part == name {
				return filepath.Join(r.Root, e.Name())
			}
		}
	}
	return filepath.Join(r.Root, name)
}

// maxDepth bounds the search: kubepods[.slice]/<qos>/<pod>/<container> is
// four levels under a controller's root, five on a kind node.
const maxDepth = 6

// findContainerDir finds the directory of the container under root. The
// layouts differ by cgroup driver: cgroupfs names it
// kubepods/pod<uid>/<id>, systemd
// kubepods.slice/kubepods-pod<uid_with_underscores>.slice/cri-containerd-<id>.scope.
// Both contain the pod UID (dashes or underscores) in the parent and the
// container ID in the leaf.
func findContainerDir(root, podUID, containerID string) (string, error) {
	if podUID == "" || containerID == "" {
		return "", errors.New("pod UID and container ID are required")
	}
	uidForms := []string{podUID, strings.ReplaceAll(podUID, "-", "_")}
	var found string
	errStop := errors.New("found")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if rel != "." && strings.Count(rel, string(filepath.Separator)) >= maxDepth {
			return filepath.SkipDir
		}
		if !strings.Contains(d.Name(), containerID) {
			return nil
		}
		parent := filepath.Base(filepath.Dir(path))
		for _, u := range uidForms {
			if strings.Contains(parent, u) {
				found = path
				return errStop
			}
		}
		return nil
	})
	if found != "" {
		return found, nil
	}
	if err != nil && !errors.Is(err, errStop) {
		return "", err
	}
	return "", fmt.Errorf("no cgroup of container %s of pod %s under %s", containerID, podUID, root)
}

func (d dirs) read() (Sample, error) {
	if d.v2 != "" {
		return readV2(d.v2)
	}
	return readV1(d)
}

func readV2(dir string) (Sample, error) {
	var s Sample
	stat, err := readKeyed(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return s, err
	}
	s.CPUSeconds = float64(stat["usage_usec"]) / 1e6
	s.ThrottledPeriods, s.ThrottledSeconds = stat["nr_throttled"], float64(stat["throttled_usec"])/1e6
	current, err := readUint(filepath.Join(dir, "memory.current"))
	if err != nil {
		return s, err
	}
	mem, err := readKeyed(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return s, err
	}
	s.MemoryBytes = workingSet(current, mem["inactive_file"])
	// memory.peak exists from Linux 5.19.
	s.MemoryPeakBytes, _ = readUint(filepath.Join(dir, "memory.peak"))
	s.CPUs, err = readFirstOf(filepath.Join(dir, "cpuset.cpus.effective"), filepath.Join(dir, "cpuset.cpus"))
	return s, err
}

func readV1(d dirs) (Sample, error) {
	var s Sample
	ns, err := readUint(filepath.Join(d.cpuacct, "cpuacct.usage"))
	if err != nil {
		return s, err
	}
	s.CPUSeconds = float64(ns) / 1e9
	// cpu.stat lives with the cpu controller, co-mounted with cpuacct on
	// the nodes seen so far; where it is not, throttling reads as none.
	if stat, err := readKeyed(filepath.Join(d.cpuacct, "cpu.stat")); err == nil {
		s.ThrottledPeriods, s.ThrottledSeconds = stat["nr_throttled"], float64(stat["throttled_time"])/1e9
	}
	usage, err := readUint(filepath.Join(d.memory, "memory.usage_in_bytes"))
	if err != nil {
		return s, err
	}
	mem, err := readKeyed(filepath.Join(d.memory, "memory.stat"))
	if err != nil {
		return s, err
	}
	s.MemoryBytes = workingSet(usage, mem["total_inactive_file"])
	s.MemoryPeakBytes, _ = readUint(filepath.Join(d.memory, "memory.max_usage_in_bytes"))
	s.CPUs, err = readFirstOf(filepath.Join(d.cpus, "cpuset.effective_cpus"), filepath.Join(d.cpus, "cpuset.cpus"))
	return s, err
}

func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile > usage {
		return 0
	}
	return usage - inactiveFile
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// readKeyed reads a "key value" per line file (cpu.stat, memory.stat).
func readKeyed(path string) (map[string]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out, sc.Err()
}

func readFirstOf(paths ...string) (string, error) {
	var firstErr error
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil && strings.TrimSpace(string(b)) != "" {
			return strings.TrimSpace(string(b)), nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("%s is empty", paths[0])
	}
	return "", firstErr
}

// SelfCPUs is the CPU list this process may run on: for the agent, a
// fractional Guaranteed container, that is the node's shared pool.
func SelfCPUs() (string, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", errors.New("no Cpus_allowed_list in /proc/self/status")
}
