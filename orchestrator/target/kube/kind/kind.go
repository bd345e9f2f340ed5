// Package kind creates (or reuses) the local kind cluster of `--target
// kind` through the sigs.k8s.io/kind library, and loads the locally built
// image into its nodes. The cluster runs the kubelet's static CPU manager
// on every node and labels one worker for the proxy and one for the load
// generator, as the GKE node pools are.
//
// kind nodes are containers sharing this machine's CPUs: a cpuset that is
// exclusive inside one node would overlap another node's, so each worker's
// kubelet reserves every CPU but its own (Layout). The nodes still share
// the machine's caches, memory bandwidth and kernel: kind numbers
// reproduce the method, not a production node (the target notes it in
// the metadata).
package kind

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"

	"github.com/wafsweep/wafsweep/orchestrator/procstat"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/spec"
)

// DefaultName is the cluster's name unless the user gives one.
const DefaultName = "wafsweep"

// kubeletPatch turns on the static CPU manager on every node, reserving
// the system's CPUs (the static policy needs a reservation); each worker
// widens the reservation with its own flag (workerPatch).
func kubeletPatch(l Layout) string {
	return fmt.Sprintf("kind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: %q\n", procstat.FormatCPUList(l.System))
}

// workerPatch makes a worker's kubelet reserve every CPU but own. The
// kubelet's flag overrides the cluster-wide configuration, which kubeadm
// join would not take per node; kind merges kubeletExtraArgs into the
// kubeadm API version it renders (a map, or v1beta4's name/value list).
func workerPatch(l Layout, own []int) []string {
	if l.Shared {
		return nil
	}
	return []string{fmt.Sprintf("kind: JoinConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n    reserved-cpus: %q\n", l.reservedFor(own))}
}

// Config is the cluster: a control plane, a proxy worker and a load
// generator worker, with the CPUs of l.
func Config(l Layout) *v1alpha4.Cluster {
	cfg := &v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Nodes: []v1alpha4.Node{
			{Role: v1alpha4.ControlPlaneRole},
			{Role: v1alpha4.WorkerRole, Labels: map[string]string{spec.NodeLabelProxy: "true"}, KubeadmConfigPatches: workerPatch(l, l.Proxy)},
			{Role: v1alpha4.WorkerRole, Labels: map[string]string{spec.NodeLabelLoadgen: "true"}, KubeadmConfigPatches: workerPatch(l, l.Loadgen)},
		},
		KubeadmConfigPatches: []string{kubeletPatch(l)},
	}
	v1alpha4.SetDefaultsCluster(cfg)
	return cfg
}

// Cluster is a kind cluster this process may use.
type Cluster struct {
	Name     string
	provider *cluster.Provider
	// Created is true when this process created it (and so may delete it).
	Created bool
}

// Ensure reuses the cluster name if it exists, or creates it with the CPUs
// of layout (which needs the kind node image present locally or pullable
// by the container runtime; nodeImage empty uses kind's default). A
// reused cluster keeps the CPUs it was made with: the target checks the
// cpusets it is given.
func Ensure(name, nodeImage string, layout Layout) (*Cluster, error) {
	if name == "" {
		name = DefaultName
	}
	opt, err := cluster.DetectNodeProvider()
	if err != nil {
		return nil, fmt.Errorf("kind: no container runtime for nodes (docker, podman or nerdctl): %w", err)
	}
	p := cluster.NewProvider(opt)
	existing, err := p.List()
	if err != nil {
		return nil, fmt.Errorf("kind: listing clusters: %w", err)
	}
	c := &Cluster{Name: name, provider: p}
	if slices.Contains(existing, name) {
		return c, nil
	}
	opts := []cluster.CreateOption{
		cluster.CreateWithV1Alpha4Config(Config(layout)),
		cluster.CreateWithWaitForReady(3 * time.Minute),
		cluster.CreateWithDisplayUsage(false),
		cluster.CreateWithDisplaySalutation(false),
	}
	if nodeImage != "" {
		opts = append(opts, cluster.CreateWithNodeImage(nodeImage))
	}
	if err := p.Create(name, opts...); err != nil {
		return nil, fmt.Errorf("kind: creating cluster %s: %w", name, err)
	}
	c.Created = true
	return c, nil
}

// Kubeconfig is the cluster's kubeconfig for this machine.
func (c *Cluster) Kubeconfig() ([]byte, error) {
	s, err := c.provider.KubeConfig(c.Name, false)
	if err != nil {
		return nil, fmt.Errorf("kind: kubeconfig of %s: %w", c.Name, err)
	}
	return []byte(s), nil
}

// LoadImageArchive imports a docker-archive tarball into every node's
// containerd, as `kind load image-archive` does: the pods then run it with
// imagePullPolicy Never.
func (c *Cluster) LoadImageArchive(archive []byte) error {
	nodes, err := c.provider.ListInternalNodes(c.Name)
	if err != nil {
		return fmt.Errorf("kind: nodes of %s: %w", c.Name, err)
	}
	for _, n := range nodes {
		if err := nodeutils.LoadImageArchive(n, bytes.NewReader(archive)); err != nil {
			return fmt.Errorf("kind: loading the image into %s: %w", n.String(), err)
		}
	}
	return nil
}

// Delete removes a cluster this process created.
func (c *Cluster) Delete() error {
	if !c.Created {
		return nil
	}
	return c.provider.Delete(c.Name, "")
}
