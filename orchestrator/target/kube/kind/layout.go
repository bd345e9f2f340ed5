package kind

import (
	"fmt"
	"os"
	"slices"

	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// Layout assigns this machine's CPUs to the kind nodes. kind nodes are
// containers that all see every CPU of the machine, and each node's
// kubelet hands out exclusive cpusets from the CPUs it does not reserve:
// two nodes reserving the same CPU 0 would give Envoy and the load
// generator the same "exclusive" CPUs. So each worker reserves every CPU
// but its own, and the workers' own CPUs are disjoint.
type Layout struct {
	// Proxy and Loadgen are the CPUs each worker's kubelet may assign.
	// Each holds one CPU more than its Guaranteed pods take whole: the
	// node's shared pool, where the fractional pods (the cgroup agent,
	// kindnet) run, needs allocatable CPU left over.
	Proxy, Loadgen []int
	// System is every other CPU: the control plane's, and reserved on
	// both workers.
	System []int
	// Shared is the fallback of --allow-shared-cpus on a machine too small
	// for disjoint CPUs: every node reserves CPU 0 only, and exclusive
	// cpusets are exclusive within a node only.
	Shared bool
}

// PlanLayout lays out the machine's CPUs for a proxy of proxyCores whole
// cores and a load generator node running loadgenCores plus backendCores.
// The system keeps the lowest CPU, the proxy worker the next ones, the
// load generator worker the ones after. A machine with too few CPUs is an
// error naming what would fit, unless allowShared.
func PlanLayout(machine []int, proxyCores, loadgenCores, backendCores int, allowShared bool) (Layout, error) {
	cpus := slices.Sorted(slices.Values(machine))
	proxyN, loadgenN := proxyCores+1, loadgenCores+backendCores+1
	if need := 1 + proxyN + loadgenN; len(cpus) < need {
		if allowShared && len(cpus) > 0 {
			return Layout{System: cpus[:1], Shared: true}, nil
		}
		return Layout{}, fmt.Errorf("kind: disjoint CPUs for the proxy node (%d: %d cores and a shared one) and the load generator node (%d: %d + %d cores and a shared one) need %d CPUs with one for the system, this machine has %d: "+
			"give fewer --proxy-cores or --loadgen-cores, or --allow-shared-cpus to measure with cpusets exclusive within a node only",
			proxyN, proxyCores, loadgenN, loadgenCores, backendCores, need, len(cpus))
	}
	return Layout{
		System:  append(slices.Clone(cpus[:1]), cpus[1+proxyN+loadgenN:]...),
		Proxy:   slices.Clone(cpus[1 : 1+proxyN]),
		Loadgen: slices.Clone(cpus[1+proxyN : 1+proxyN+loadgenN]),
	}, nil
}

// reservedFor is what a worker owning own reserves: every other CPU.
func (l Layout) reservedFor(own []int) string {
	var reserved []int
	for _, set := range [][]int{l.System, l.Proxy, l.Loadgen} {
		for _, c := range set {
			if !slices.Contains(own, c) {
				reserved = append(reserved, c)
			}
		}
	}
	slices.Sort(reserved)
	return procstat.FormatCPUList(reserved)
}

// String is the layout as the metadata notes it.
func (l Layout) String() string {
	if l.Shared {
		return "every kind node reserves CPU " + procstat.FormatCPUList(l.System) + " only: the nodes' exclusive cpusets may overlap (--allow-shared-cpus)"
	}
	return fmt.Sprintf("kind nodes' CPUs: proxy worker %s, load generator worker %s, system %s (each worker's kubelet reserves every CPU but its own)",
		procstat.FormatCPUList(l.Proxy), procstat.FormatCPUList(l.Loadgen), procstat.FormatCPUList(l.System))
}

// MachineCPUs are the CPUs online on this machine, which every kind node
// sees (not this process's affinity: the nodes are the container runtime's
// children, not ours).
func MachineCPUs() ([]int, error) {
	raw, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("kind: online CPUs: %w", err)
	}
	cpus, err := procstat.ParseCPUList(string(raw))
	if err != nil {
		return nil, fmt.Errorf("kind: online CPUs: %w", err)
	}
	return cpus, nil
}
