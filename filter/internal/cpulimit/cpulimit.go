// Package cpulimit tells how many CPUs the process may use: the CPUs of its
// affinity mask (a cpuset, taskset, Kubernetes' static CPU manager), capped
// by the CPU quota of its cgroup and of every cgroup above it (a Kubernetes
// CPU limit, docker --cpus).
//
// runtime.NumCPU sees the affinity mask only, and the Go runtime's own
// quota-aware GOMAXPROCS default is at least 2 and is gone once anything
// calls runtime.GOMAXPROCS. corazawaf sizes its inspection threads by what
// this package reports: a pod limited to one CPU gets one thread, however
// many CPUs its node has.
package cpulimit

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// Limit is what bounds the process's CPUs.
type Limit struct {
	// Affinity is the number of CPUs the process may run on.
	Affinity int
	// Quota is the tightest cgroup CPU quota, in CPUs (1.5 = 150 ms per
	// 100 ms period); 0 when no cgroup sets one.
	Quota float64
}

// CPUs is the number of CPUs the process can keep busy: the affinity, capped
// by the quota rounded up, and at least 1.
func (l Limit) CPUs() int {
	n := l.Affinity
	if l.Quota > 0 {
		n = min(n, int(math.Ceil(l.Quota)))
	}
	return max(n, 1)
}

func (l Limit) String() string {
	if l.Quota == 0 {
		return fmt.Sprintf("%d CPUs (affinity; no cgroup quota)", l.Affinity)
	}
	return fmt.Sprintf("%d CPUs (affinity %d, cgroup quota %.2f)", l.CPUs(), l.Affinity, l.Quota)
}

// Current reads the calling process's limit. A cgroup file it cannot read or
// parse leaves the quota unknown (0): the affinity alone is then the answer,
// never an error that would stop Envoy from loading the module.
func Current() Limit {
	q, _ := Quota(os.DirFS("/"))
	return Limit{Affinity: runtime.NumCPU(), Quota: q}
}

// Quota reads the tightest CPU quota of the process's cgroups from root, a
// file system holding proc/self/cgroup and sys/fs/cgroup (os.DirFS("/"), or
// a test's map). It understands cgroup v2 (cpu.max) and v1 (cpu.cfs_quota_us
// over cpu.cfs_period_us), and walks from the process's cgroup up to the
// root, since a parent's quota binds its children too.
func Quota(root fs.FS) (float64, error) {
	membership, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return 0, fmt.Errorf("reading the process's cgroups: %w", err)
	}
	best := 0.0
	for _, m := range parseMembership(membership) {
		for _, dir := range ancestors(m.mount, m.path) {
			q, ok := m.read(root, dir)
			if ok && (best == 0 || q < best) {
				best = q
			}
		}
	}
	return best, nil
}

// membership is one cgroup hierarchy the process belongs to, with where its
// CPU controller is mounted and how to read a quota there.
type membership struct {
	mount, path string
	read        func(root fs.FS, dir string) (float64, bool)
}

// parseMembership reads /proc/self/cgroup ("hierarchy-id:controllers:path"):
// the v2 line has id 0 and no controllers; a v1 line lists cpu among its
// controllers.
func parseMembership(data []byte) []membership {
	var out []membership
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), ":", 3)
		if len(fields) != 3 {
			continue
		}
		controllers, p := fields[1], fields[2]
		switch {
		case fields[0] == "0" && controllers == "":
			out = append(out, membership{mount: "sys/fs/cgroup", path: p, read: readV2})
		case slices.Contains(strings.Split(controllers, ","), "cpu"):
			for _, mount := range []string{"sys/fs/cgroup/" + controllers, "sys/fs/cgroup/cpu"} {
				out = append(out, membership{mount: mount, path: p, read: readV1})
			}
		}
	}
	return out
}

// ancestors lists the cgroup directories from the process's own up to the
// mount's root. Inside a container with its own cgroup namespace the path is
// "/" and the mount's root is the container's cgroup.
func ancestors(mount, cgroupPath string) []string {
	var dirs []string
	for p := path.Clean("/" + cgroupPath); ; p = path.Dir(p) {
		dirs = append(dirs, path.Join(mount, p))
		if p == "/" {
			return dirs
		}
	}
}

// readV2 reads cgroup v2's cpu.max: "max 100000" (no quota) or
// "150000 100000" (quota and period, in microseconds).
func readV2(root fs.FS, dir string) (float64, bool) {
	data, err := fs.ReadFile(root, path.Join(dir, "cpu.max"))
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 || fields[0] == "max" {
		return 0, false
	}
	return ratio(fields[0], fields[1])
}

// readV1 reads cgroup v1's cpu.cfs_quota_us (-1: no quota) over
// cpu.cfs_period_us.
func readV1(root fs.FS, dir string) (float64, bool) {
	quota, err1 := fs.ReadFile(root, path.Join(dir, "cpu.cfs_quota_us"))
	period, err2 := fs.ReadFile(root, path.Join(dir, "cpu.cfs_period_us"))
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return ratio(strings.TrimSpace(string(quota)), strings.TrimSpace(string(period)))
}

func ratio(quota, period string) (float64, bool) {
	q, err1 := strconv.ParseFloat(quota, 64)
	p, err2 := strconv.ParseFloat(period, 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0, false
	}
	return q / p, true
}
