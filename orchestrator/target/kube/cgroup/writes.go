package cgroup

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// Writes are what a container's processes wrote, read through the processes
// its cgroup lists. The agent sees them only when it shares the node's PID
// namespace (hostPID) and runs as their user (everything here runs as
// nobody); otherwise both fields are -1, not measured.
type Writes struct {
	// WrittenBytes is the sum of the processes' write_bytes (counted when a
	// page is dirtied: a buffered write counts before the kernel flushes
	// it, unlike the cgroup's io.stat), as the local target reads Envoy's.
	WrittenBytes int64 `json:"written_bytes"`
	// FileBytes is the size of the file asked for, as the container sees
	// it (the audit log in its emptyDir); -1 when none was asked.
	FileBytes int64 `json:"file_bytes"`
}

// notMeasured is what a field holds when it cannot be read.
const notMeasured = -1

// ReadWrites reads the writes of a container and the size of file inside
// it ("" for none: an absolute path, as in the container).
func (r *Reader) ReadWrites(podUID, containerID, file string) (Writes, error) {
	w := Writes{WrittenBytes: notMeasured, FileBytes: notMeasured}
	if file != "" && (!path.IsAbs(file) || path.Clean(file) != file) {
		return w, fmt.Errorf("file %q: give a clean absolute path", file)
	}
	d, err := r.find(podUID, containerID)
	if err != nil {
		return w, err
	}
	pids, err := readPIDs(filepath.Join(d.procsDir(), "cgroup.procs"))
	if err != nil || len(pids) == 0 {
		// A PID namespace of its own lists none of them (or zeros).
		return w, nil
	}
	var total int64
	for _, pid := range pids {
		n, err := procstat.WrittenBytes(pid)
		if err != nil {
			return w, nil
		}
		total += n
	}
	w.WrittenBytes = total
	if file != "" {
		// Lstat: the file itself, never where a link in it points.
		if info, err := os.Lstat(fmt.Sprintf("/proc/%d/root%s", pids[0], file)); err == nil && info.Mode().IsRegular() {
			w.FileBytes = info.Size()
		}
	}
	return w, nil
}

// procsDir is the directory whose cgroup.procs lists the container's
// processes.
func (d dirs) procsDir() string {
	if d.v2 != "" {
		return d.v2
	}
	return d.cpuacct
}

// readPIDs reads a cgroup.procs file; PIDs outside the reader's namespace
// read as 0 and are left out.
func readPIDs(file string) ([]int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
