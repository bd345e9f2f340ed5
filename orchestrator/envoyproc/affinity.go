package envoyproc

import (
	"fmt"
	"os/exec"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"
)

// maxCPU is the number of CPUs a unix.CPUSet can name.
const maxCPU = len(unix.CPUSet{}) * 64

func cpuSet(cpus []int) unix.CPUSet {
	var set unix.CPUSet
	set.Zero()
	for _, cpu := range cpus {
		set.Set(cpu)
	}
	return set
}

// startOnOwnThread starts cmd from a dedicated OS thread and reaps it there,
// calling reaped with cmd.Wait's result. The thread matters twice:
//   - CPU pinning: the child inherits the forking thread's affinity mask from
//     birth. Setting it on the child after start would race with Envoy
//     spawning its workers, which inherit the mask of their creator.
//   - Pdeathsig fires when the forking *thread* exits, so that thread must
//     live exactly as long as the child. It is never unlocked, so the runtime
//     discards it (and its mask) when the goroutine ends after the reap.
func startOnOwnThread(cmd *exec.Cmd, cpus []int, reaped func(error)) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if len(cpus) > 0 {
			set := cpuSet(cpus)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				started <- fmt.Errorf("set CPU affinity %v: %w", cpus, err)
				return
			}
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		reaped(cmd.Wait())
	}()
	return <-started
}

// Affinity returns the CPUs the process with this pid may run on.
func Affinity(pid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &set); err != nil {
		return nil, fmt.Errorf("envoyproc: get CPU affinity of pid %d: %w", pid, err)
	}
	var cpus []int
	for cpu := range maxCPU {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus, nil
}

func sameCPUs(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
