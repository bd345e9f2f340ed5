package envoyproc

import (
	"slices"

	"github.com/wafsweep/wafsweep/orchestrator/childproc"
)

// Affinity returns the CPUs the process with this pid may run on.
func Affinity(pid int) ([]int, error) { return childproc.Affinity(pid) }

func sameCPUs(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
