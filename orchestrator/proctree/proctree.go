// Package proctree accounts a process together with all its descendants,
// for proxies that serve from several processes (nginx: a master and its
// workers). A single-process proxy is accounted by package procstat; a
// process tree needs the sum over its members, and the CPU of members that
// exited, and a memory figure that does not count pages shared between
// the members once per member.
package proctree

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat;
// Linux fixes it at 100 on every architecture the sweep runs on.
const clockTicks = 100

// Stat is what the tree accounting needs from /proc/<pid>/stat.
type Stat struct {
	PPID int
	// State is the one-letter process state ("Z" for a zombie).
	State string
	// UserSys is utime+stime of all the process's threads, in seconds.
	UserSys float64
	// ChildrenUserSys is cutime+cstime: the CPU of children this process
	// has waited for (an nginx worker that exited and was reaped by the
	// master), in seconds.
	ChildrenUserSys float64
	// StartTicks is the start time in clock ticks since boot: with the pid
	// it identifies a process across pid reuse.
	StartTicks uint64
}

// ReadStat reads /proc/<pid>/stat.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, fmt.Errorf("proctree: %w", err)
	}
	return parseStat(b)
}

// parseStat reads the fields after the command name, which may itself hold
// spaces and parentheses: fields are counted from the last ')'.
func parseStat(stat []byte) (Stat, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return Stat{}, fmt.Errorf("proctree: malformed stat %q", stat)
	}
	// After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16)
	// cstime(17) ... starttime(22): indexes 0, 1, 11, 12, 13, 14 and 19.
	f := strings.Fields(string(stat[end+1:]))
	if len(f) < 20 {
		return Stat{}, fmt.Errorf("proctree: short stat %q", stat)
	}
	var nums [6]uint64
	for i, idx := range []int{1, 11, 12, 13, 14, 19} {
		n, err := strconv.ParseUint(f[idx], 10, 64)
		if err != nil {
			return Stat{}, fmt.Errorf("proctree: field %d of stat %q: %w", idx+3, stat, err)
		}
		nums[i] = n
	}
	return Stat{
		State:           f[0],
		PPID:            int(nums[0]),
		UserSys:         float64(nums[1]+nums[2]) / clockTicks,
		ChildrenUserSys: float64(nums[3]+nums[4]) / clockTicks,
		StartTicks:      nums[5],
	}, nil
}

// Children lists the direct children of pid. It reads
// /proc/<pid>/task/*/children where the kernel provides it
// (CONFIG_PROC_CHILDREN) and otherwise scans every /proc/<n>/stat for the
// parent pid.
func Children(pid int) ([]int, error) {
	kids, err := childrenFromTasks(pid)
	if errors.Is(err, fs.ErrNotExist) {
		if _, statErr := os.Stat(fmt.Sprintf("/proc/%d", pid)); statErr != nil {
			return nil, fmt.Errorf("proctree: pid %d: %w", pid, statErr)
		}
		kids, err = childrenFromScan(pid)
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(kids)
	return slices.Compact(kids), nil
}

// childrenFromTasks reads the children files. A child is listed under the
// thread that created it, so every thread's file is read.
func childrenFromTasks(pid int) ([]int, error) {
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil {
		return nil, fmt.Errorf("proctree: %w", err)
	}
	if len(files) == 0 {
		return nil, fs.ErrNotExist
	}
	var kids []int
	for _, file := range files {
		b, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the thread ended since the glob
		}
		if err != nil {
			return nil, fmt.Errorf("proctree: %w", err)
		}
		for _, field := range strings.Fields(string(b)) {
			kid, err := strconv.Atoi(field)
			if err != nil {
				return nil, fmt.Errorf("proctree: %s: %q is not a pid", file, field)
			}
			kids = append(kids, kid)
		}
	}
	return kids, nil
}

func childrenFromScan(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("proctree: %w", err)
	}
	var kids []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := ReadStat(n)
		if err != nil {
			continue // exited since the listing
		}
		if st.PPID == pid {
			kids = append(kids, n)
		}
	}
	return kids, nil
}

// Members is pid followed by all its descendants, depth first. Members that
// exit while the tree is walked are left out.
func Members(pid int) ([]int, error) {
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return nil, fmt.Errorf("proctree: pid %d: %w", pid, err)
	}
	members := []int{pid}
	for i := 0; i < len(members); i++ {
		kids, err := Children(members[i])
		if err != nil {
			if i == 0 {
				return nil, err
			}
			continue // a descendant exited while we walked
		}
		members = append(members, kids...)
	}
	return members, nil
}

// Usage is a sample of a process tree's resources.
type Usage struct {
	// Processes is the number of live members, the root included.
	Processes int
	// CPUSeconds is user+system CPU of every live member, plus the CPU of
	// exited children the members have reaped, so the sum never goes back
	// when an nginx worker is replaced.
	CPUSeconds float64
	// RSSBytes is the sum of the members' VmRSS. Pages the members share
	// (an nginx master's rule set, copied on write into every worker) are
	// counted once per member: an overstatement.
	RSSBytes uint64
	// PSSBytes is the sum of the members' proportional set size (Pss in
	// /proc/<pid>/smaps_rollup): each shared page is split between the
	// processes sharing it, so the sum counts it once. It is the memory the
	// tree holds. Zero when the kernel does not provide smaps_rollup.
	PSSBytes uint64
	// PeakRSSBytes is the sum of the members' VmHWM. Each member's peak may
	// fall at a different time and shared pages count once per member, so
	// this is an upper bound of the tree's lifetime peak, not the peak.
	PeakRSSBytes uint64
	// WrittenBytes is the sum of the live members' write_bytes (see
	// procstat.WrittenBytes); -1 when a member's could not be read. What
	// exited members wrote is not in it: the kernel keeps no sum of
	// reaped children's I/O as it does of their CPU.
	WrittenBytes int64
}

// Read samples the tree rooted at pid.
func Read(pid int) (Usage, error) {
	members, err := Members(pid)
	if err != nil {
		return Usage{}, err
	}
	var u Usage
	havePSS := true
	for i, m := range members {
		st, err := ReadStat(m)
		if err != nil || st.State == "Z" {
			if i == 0 {
				return Usage{}, fmt.Errorf("proctree: root pid %d is gone", pid)
			}
			continue // exited between the walk and now
		}
		mem, err := readStatus(m)
		if err != nil {
			if i == 0 {
				return Usage{}, err
			}
			continue
		}
		u.Processes++
		u.CPUSeconds += st.UserSys + st.ChildrenUserSys
		u.RSSBytes += mem.rss
		u.PeakRSSBytes += mem.hwm
		if u.WrittenBytes >= 0 {
			if w, err := procstat.WrittenBytes(m); err == nil {
				u.WrittenBytes += w
			} else {
				u.WrittenBytes = -1
			}
		}
		if havePSS {
			pss, err := readPSS(m)
			if err != nil {
				havePSS = false
				u.PSSBytes = 0
				continue
			}
			u.PSSBytes += pss
		}
	}
	return u, nil
}

type statusMemory struct{ rss, hwm uint64 }

func readStatus(pid int) (statusMemory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return statusMemory{}, fmt.Errorf("proctree: %w", err)
	}
	vals, err := kBFields(b, "VmRSS", "VmHWM")
	if err != nil {
		return statusMemory{}, fmt.Errorf("proctree: /proc/%d/status: %w", pid, err)
	}
	return statusMemory{rss: vals[0], hwm: vals[1]}, nil
}

func readPSS(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, fmt.Errorf("proctree: %w", err)
	}
	vals, err := kBFields(b, "Pss")
	if err != nil {
		return 0, fmt.Errorf("proctree: /proc/%d/smaps_rollup: %w", pid, err)
	}
	return vals[0], nil
}

// kBFields returns, in bytes, the "Name:   123 kB" lines named, in order.
func kBFields(text []byte, names ...string) ([]uint64, error) {
	vals := make([]uint64, len(names))
	found := make([]bool, len(names))
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		i := slices.Index(names, name)
		if i < 0 {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad %s %q", name, value)
		}
		vals[i], found[i] = kb<<10, true
	}
	for i, ok := range found {
		if !ok {
			return nil, fmt.Errorf("%s missing", names[i])
		}
	}
	return vals, nil
}
