package cgroup

import (
	"fmt"

	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// Exclusive judges a container's cpuset: exclusive when it has exactly
// cores CPUs and shares none with the node's shared pool (where every
// fractional container, the agent included, runs). why explains a false.
func Exclusive(containerCPUs, sharedCPUs string, cores int) (exclusive bool, why string, err error) {
	mine, err := procstat.ParseCPUList(containerCPUs)
	if err != nil {
		return false, "", fmt.Errorf("container cpuset %q: %w", containerCPUs, err)
	}
	shared, err := procstat.ParseCPUList(sharedCPUs)
	if err != nil {
		return false, "", fmt.Errorf("shared pool %q: %w", sharedCPUs, err)
	}
	if len(mine) != cores {
		return false, fmt.Sprintf("cpuset %s has %d CPUs, the container asked for %d: is the kubelet's CPU manager policy static?", containerCPUs, len(mine), cores), nil
	}
	inShared := map[int]bool{}
	for _, c := range shared {
		inShared[c] = true
	}
	for _, c := range mine {
		if inShared[c] {
			return false, fmt.Sprintf("CPU %d of cpuset %s is also in the shared pool %s", c, containerCPUs, sharedCPUs), nil
		}
	}
	return true, "", nil
}
