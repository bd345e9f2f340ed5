package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wafsweep/wafsweep/orchestrator/procstat"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/cgroup"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/spec"
)

// placement is where a measured container runs, as verified: its pod's QoS
// class and its cpuset against the node's shared pool.
type placement struct {
	Pod        string `json:"pod"`
	Node       string `json:"node"`
	QOSClass   string `json:"qos_class"`
	Cores      int    `json:"cores"`
	CPUs       string `json:"cpus"`
	SharedCPUs string `json:"shared_cpus"`
	Exclusive  bool   `json:"exclusive"`
	Why        string `json:"why,omitempty"` // why not exclusive
	// nodesShareCPUs: kind, whose nodes share the machine's CPUs.
	nodesShareCPUs bool
}

func (p placement) exclusivity() string {
	switch {
	case p.Exclusive && p.nodesShareCPUs:
		return "exclusive within its node; kind nodes share the machine, so the proxy's cpuset is checked against the others'"
	case p.Exclusive:
		return "exclusive"
	case p.Cores == 0:
		return "shared pool: fractional CPU"
	}
	return "NOT exclusive: " + p.Why
}

// String is the metadata's core assignment of a role.
func (p placement) String() string {
	return fmt.Sprintf("%s:%s (%s)", p.Node, p.CPUs, p.exclusivity())
}

// place verifies a running pod: Guaranteed (an error otherwise: the
// numbers would depend on neighbours), and for whole cores an exclusive
// cpuset, read from the node's cgroup agent.
func (k *Kube) place(ctx context.Context, pod *corev1.Pod, container string, cores int) (placement, error) {
	exclusive := ""
	if cores > 0 {
		exclusive = container
	}
	if err := spec.CheckGuaranteed(pod, exclusive); err != nil {
		return placement{}, err
	}
	p := placement{Pod: pod.Name, Node: pod.Spec.NodeName, QOSClass: string(pod.Status.QOSClass), Cores: cores}
	// The CPU manager moves the shared pool off newly exclusive cores in
	// its reconcile loop (every 10 s by default): until then the other
	// containers still run on them. Wait for that, not only for the
	// assignment; a cpuset of the wrong size will not change.
	deadline := time.Now().Add(exclusiveWait)
	for {
		r, err := k.readContainer(ctx, pod, container)
		if err != nil {
			return p, fmt.Errorf("reading the cpuset of %s in %s: %w", container, pod.Name, err)
		}
		p.CPUs, p.SharedCPUs = r.CPUs, r.SharedCPUs
		if cores == 0 {
			p.Why = "fractional CPU"
			return p, nil
		}
		var sized bool
		p.Exclusive, p.Why, sized, err = judge(r, cores)
		if err != nil || p.Exclusive || !sized || time.Now().After(deadline) {
			return p, err
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// exclusiveWait covers the CPU manager's default reconcile period twice.
const exclusiveWait = 25 * time.Second

// judge is cgroup.Exclusive plus whether the cpuset has the right size
// (only then can waiting help).
func judge(r cgroup.Reading, cores int) (exclusive bool, why string, sized bool, err error) {
	cpus, err := procstat.ParseCPUList(r.CPUs)
	if err != nil {
		return false, "", false, err
	}
	exclusive, why, err = cgroup.Exclusive(r.CPUs, r.SharedCPUs, cores)
	return exclusive, why, len(cpus) == cores, err
}

// checkOwnCPUs refuses a proxy whose cpuset overlaps the load generator's
// or the backend's on the same machine (kind's nodes are all one machine;
// elsewhere, the same node): its "exclusive" cores would not be its own.
// With AllowSharedCPUs the overlap is noted instead.
//
// A shared-pool container on the proxy's own node was placed before the
// proxy's cores became exclusive: it is read again until the CPU manager's
// reconcile loop has moved it off them. An overlap across kind's nodes
// never heals, and is judged at once.
func (k *Kube) checkOwnCPUs(ctx context.Context, proxy placement) error {
	deadline := time.Now().Add(exclusiveWait)
	for {
		role, overlap, err := k.overlap(proxy)
		if err != nil || overlap == "" {
			return err
		}
		k.mu.Lock()
		other := k.placed[role]
		k.mu.Unlock()
		if other.Node != proxy.Node || other.Exclusive || time.Now().After(deadline) {
			return k.refuseOrNote(overlap)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		if err := k.replace(ctx, role); err != nil {
			return err
		}
	}
}

// overlap names the first role whose cpuset shares CPUs with the proxy's
// on one machine, and says how ("" when none does).
func (k *Kube) overlap(proxy placement) (role, overlap string, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	cpus, err := procstat.ParseCPUList(proxy.CPUs)
	if err != nil {
		return "", "", fmt.Errorf("the proxy's cpuset: %w", err)
	}
	for _, role := range []string{"loadgen", "backend"} {
		other, ok := k.placed[role]
		if !ok || (!k.opts.NodesShareCPUs && other.Node != proxy.Node) {
			continue
		}
		theirs, err := procstat.ParseCPUList(other.CPUs)
		if err != nil {
			return "", "", fmt.Errorf("the %s's cpuset: %w", role, err)
		}
		if shared := procstat.CommonCPUs(cpus, theirs); len(shared) > 0 {
			return role, fmt.Sprintf("the proxy's cpuset %s (node %s) shares CPUs %s with the %s's %s (node %s) on one machine",
				proxy.CPUs, proxy.Node, procstat.FormatCPUList(shared), role, other.CPUs, other.Node), nil
		}
	}
	return "", "", nil
}

// refuseOrNote is an overlap's error, or with AllowSharedCPUs its note
// (once: every configuration's Envoy is checked).
func (k *Kube) refuseOrNote(overlap string) error {
	if !k.opts.AllowSharedCPUs {
		return errors.New(overlap + ": on kind, delete the cluster (kind delete cluster --name <cluster>) so that it is made with disjoint CPUs, or allow shared CPUs")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if note := overlap + " (--allow-shared-cpus): knees, latency and cores per 1k RPS are not the proxy's alone"; !slices.Contains(k.notes, note) {
		k.notes = append(k.notes, note)
	}
	return nil
}

// replace reads a shared-pool role's cpuset again and records it as the
// role's placement: the metadata names the cpuset it was measured on.
func (k *Kube) replace(ctx context.Context, role string) error {
	k.mu.Lock()
	pod, container, cores := k.fortioPod, spec.Fortio, k.placed[role].Cores
	if role == "backend" {
		pod, container = k.backendPod, spec.Backend
	}
	k.mu.Unlock()
	if pod == nil {
		return fmt.Errorf("the %s has no pod to read its cpuset from", role)
	}
	p, err := k.place(ctx, pod, container, cores)
	if err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	p.nodesShareCPUs = k.opts.NodesShareCPUs
	k.placed[role] = p
	k.assignment[role] = p.String()
	return nil
}

// writePlacement records a deployment's placement in its run directory.
func writePlacement(runDir string, p placement) error {
	if runDir == "" {
		return nil
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(runDir, "placement.json"), append(b, '\n'), 0o644)
}

// cpuManagerPolicy asks the node's kubelet (through the API server's node
// proxy, a control request) for its CPU manager policy.
func (k *Kube) cpuManagerPolicy(ctx context.Context, node string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	raw, err := k.client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "configz").DoRaw(ctx)
	if err != nil {
		// The API server's own words are in the body (e.g. it refuses to
		// proxy to a loopback node address).
		var status metav1.Status
		if json.Unmarshal(raw, &status) == nil && status.Message != "" {
			return "unknown (the kubelet's configz: " + status.Message + ")"
		}
		return "unknown (the kubelet's configz: " + err.Error() + ")"
	}
	var cfg struct {
		KubeletConfig struct {
			CPUManagerPolicy   string `json:"cpuManagerPolicy"`
			ReservedSystemCPUs string `json:"reservedSystemCPUs"`
		} `json:"kubeletconfig"`
	}
	if json.Unmarshal(raw, &cfg) != nil || cfg.KubeletConfig.CPUManagerPolicy == "" {
		return "unknown"
	}
	s := cfg.KubeletConfig.CPUManagerPolicy
	if cfg.KubeletConfig.ReservedSystemCPUs != "" {
		s += " (reserved system CPUs " + cfg.KubeletConfig.ReservedSystemCPUs + ")"
	}
	return s
}
