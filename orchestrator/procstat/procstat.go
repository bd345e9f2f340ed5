// Package procstat reads what the sweep accounts per process from /proc:
// CPU time and resident memory, plus the CPU pinning of whole processes.
// It reads files the kernel keeps anyway, so sampling does not perturb the
// measured process.
package procstat

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// Linux fixes it at 100 on every architecture the sweep runs on.
const clockTicks = 100

// CPUSeconds is the user+system CPU time of all threads of pid.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	return parseStatCPU(b)
}

// parseStatCPU extracts utime+stime. The command name (field 2) may hold
// spaces and parentheses, so fields are counted from the last ')'.
func parseStatCPU(stat []byte) (float64, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("procstat: malformed stat %q", stat)
	}
	fields := strings.Fields(string(stat[end+1:]))
	// After the name: state(3) ... utime(14) stime(15): indexes 11 and 12.
	if len(fields) < 13 {
		return 0, fmt.Errorf("procstat: short stat %q", stat)
	}
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("procstat: bad utime/stime in %q", stat)
	}
	return float64(utime+stime) / clockTicks, nil
}

// Memory is a process's resident set now and its lifetime peak.
type Memory struct {
	RSSBytes  uint64 // VmRSS
	PeakBytes uint64 // VmHWM: the high-water mark since the process started
}

// ReadMemory reads VmRSS and VmHWM from /proc/<pid>/status.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("procstat: %w", err)
	}
	return parseStatusMemory(b)
}

func parseStatusMemory(status []byte) (Memory, error) {
	var m Memory
	var seen int
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return m, fmt.Errorf("procstat: bad %s %q", name, value)
		}
		if name == "VmRSS" {
			m.RSSBytes = kb << 10
		} else {
			m.PeakBytes = kb << 10
		}
		seen++
	}
	if seen != 2 {
		return m, fmt.Errorf("procstat: VmRSS/VmHWM missing from status")
	}
	return m, nil
}

// SelfCPUSeconds is this process's own user+system CPU time (all threads),
// the load generator's cost when it runs in-process.
func SelfCPUSeconds() (float64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("procstat: getrusage: %w", err)
	}
	return tv(ru.Utime) + tv(ru.Stime), nil
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// PinProcess sets the CPU affinity of every thread of pid. Threads created
// afterwards inherit their creator's mask, so the whole process stays on
// cpus from then on.
func PinProcess(pid int, cpus []int) error {
	set := cpuSet(cpus)
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil || len(tasks) == 0 {
		return fmt.Errorf("procstat: list threads of %d: %v", pid, err)
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(filepath.Base(task))
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("procstat: pin thread %d to %v: %w", tid, cpus, err)
		}
	}
	return nil
}

// PinThread sets the CPU affinity of the calling OS thread only. The
// caller holds runtime.LockOSThread and never unlocks it, so that the
// runtime discards the thread, and its mask, when the goroutine ends.
func PinThread(cpus []int) error {
	set := cpuSet(cpus)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("procstat: pin this thread to %v: %w", cpus, err)
	}
	return nil
}

func cpuSet(cpus []int) unix.CPUSet {
	var set unix.CPUSet
	set.Zero()
	for _, c := range cpus {
		set.Set(c)
	}
	return set
}

// CPUModel is the first "model name" of /proc/cpuinfo.
func CPUModel() string {
	model, _ := CPUInfo()
	return model
}

// CPUInfo is the first "model name" of /proc/cpuinfo and its number of
// processors: the machine's (or, in a container, its node's) CPUs, which
// unlike runtime.NumCPU do not depend on this process's cpuset.
func CPUInfo() (model string, cpus int) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown", 0
	}
	return parseCPUInfo(string(b))
}

func parseCPUInfo(text string) (model string, cpus int) {
	model = "unknown"
	for _, line := range strings.Split(text, "\n") {
		name, value, ok := strings.Cut(line, ":")
		switch strings.TrimSpace(name) {
		case "processor":
			cpus++
		case "model name":
			if ok && model == "unknown" {
				model = strings.TrimSpace(value)
			}
		}
	}
	return model, cpus
}

// ParseCPUList parses a kernel-style CPU list such as "0-2,5".
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q: bad range %q", s, part)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("CPU list %q is empty", s)
	}
	return cpus, nil
}

// CommonCPUs lists the CPUs of a that b also holds, in a's order.
func CommonCPUs(a, b []int) []int {
	var common []int
	for _, c := range a {
		if slices.Contains(b, c) {
			common = append(common, c)
		}
	}
	return common
}

// FormatCPUList is the inverse of ParseCPUList for sorted lists.
func FormatCPUList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// RunDelaySeconds is the time the threads of pid have spent runnable but
// waiting for a CPU (the second field of each thread's schedstat). A
// process whose run delay grows while it should be idle-ish shares its
// CPUs with something else: a load generator in that state is late for
// reasons that have nothing to do with the proxy it measures.
func RunDelaySeconds(pid int) (float64, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("procstat: no threads of %d to read (%v)", pid, err)
	}
	var total uint64
	for _, path := range tasks {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the thread ended between the glob and the read
		}
		delay, err := parseSchedstatDelay(b)
		if err != nil {
			return 0, fmt.Errorf("procstat: %s: %w", path, err)
		}
		total += delay
	}
	return float64(total) / 1e9, nil
}

// parseSchedstatDelay reads "<on-cpu ns> <run-delay ns> <timeslices>".
func parseSchedstatDelay(b []byte) (uint64, error) {
	fields := strings.Fields(string(b))
	if len(fields) < 2 {
		return 0, fmt.Errorf("malformed schedstat %q", b)
	}
	return strconv.ParseUint(fields[1], 10, 64)
}

// StealSeconds is the time the hypervisor ran something else while cpus
// wanted to run (the steal column of /proc/stat), summed over cpus. A
// measured process whose CPUs were stolen from ran slower for reasons
// that are not its own.
func StealSeconds(cpus []int) (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	return parseSteal(b, cpus)
}

func parseSteal(stat []byte, cpus []int) (float64, error) {
	var total uint64
	found := 0
	for _, line := range strings.Split(string(stat), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 9 || !strings.HasPrefix(fields[0], "cpu") || fields[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(fields[0], "cpu"))
		if err != nil || !slices.Contains(cpus, n) {
			continue
		}
		steal, err := strconv.ParseUint(fields[8], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("procstat: bad steal of %s: %w", fields[0], err)
		}
		total += steal
		found++
	}
	if found != len(cpus) {
		return 0, fmt.Errorf("procstat: /proc/stat lists %d of CPUs %v", found, cpus)
	}
	return float64(total) / clockTicks, nil
}

// WrittenBytes is what pid has caused to be written to storage so far:
// write_bytes of /proc/<pid>/io, counted when a page is dirtied, so a
// buffered write counts before the kernel flushes it. Writes to sockets
// and pipes are not in it, nor writes to a file system without a block
// device behind it (tmpfs): there it stays 0.
func WrittenBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	return parseIOWriteBytes(b)
}

// StorageCounted reports whether writes to files under dir reach
// WrittenBytes: false on a file system in memory (tmpfs, ramfs), whose
// pages never go to a storage layer.
func StorageCounted(dir string) (bool, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return false, fmt.Errorf("procstat: %w", err)
	}
	return fs.Type != unix.TMPFS_MAGIC && fs.Type != unix.RAMFS_MAGIC, nil
}

func parseIOWriteBytes(io []byte) (int64, error) {
	for line := range strings.Lines(string(io)) {
		if v, ok := strings.CutPrefix(line, "write_bytes:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("procstat: bad write_bytes in %q: %w", io, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("procstat: no write_bytes in %q", io)
}
