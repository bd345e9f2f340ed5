package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Fake nodes are managed by kwok through this annotation, and tainted so
// that only pods tolerating them land there.
const (
	FakeNodeAnnotation = "kwok.x-k8s.io/node"
	FakeNodeTaintKey   = "kwok.x-k8s.io/node"
)

// FakeTolerations let a pod onto the fake nodes.
func FakeTolerations() []corev1.Toleration {
	return []corev1.Toleration{{Key: FakeNodeTaintKey, Operator: corev1.TolerationOpEqual, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}
}

// FakeNode is a node kwok pretends to run.
type FakeNode struct {
	Name   string
	Labels map[string]string
	CPU    string // capacity, e.g. "4"
	Memory string // e.g. "16Gi"
	// Tainted nodes take only pods with FakeTolerations.
	Tainted bool
}

// Kwok is a running kwok.
type Kwok struct {
	proc *process
}

// StartKwok starts kwok on the control plane. forwards maps pod ports to
// local addresses: a port-forward to any pod on a fake node reaches the
// address of its port (stand-ins for what the pods would serve).
func (cp *ControlPlane) StartKwok(ctx context.Context, forwards map[int32]string) (*Kwok, error) {
	if err := cp.pki.issue("kwok", "kwok", "", true); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	stages, err := os.ReadFile(cp.bin("kwok-stages.yaml"))
	if err != nil {
		return nil, err
	}
	config := kwokConfig(withContainerIDs(string(stages)), forwards)
	configPath := filepath.Join(cp.Dir, "kwok.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return nil, err
	}
	proc, err := start(cp.Dir, "kwok", cp.bin("kwok"),
		"--kubeconfig", cp.Kubeconfig, "--config", configPath,
		"--manage-nodes-with-annotation-selector", FakeNodeAnnotation+"=fake",
		// The API server reaches kwok's kubelet API (port-forward) at the
		// node's InternalIP and port: both on 127.0.0.1.
		"--node-ip", "127.0.0.1", "--node-port", strconv.Itoa(port),
		"--server-address", "127.0.0.1:"+strconv.Itoa(port),
		"--tls-cert-file", cp.pki.path("kwok.crt"), "--tls-private-key-file", cp.pki.path("kwok.key"),
		// Pod IPs are only data: nothing is ever sent to them.
		"--cidr", "10.244.0.1/24")
	if err != nil {
		return nil, err
	}
	cp.add(proc)
	time.Sleep(200 * time.Millisecond)
	if proc.exited() {
		return nil, fmt.Errorf("kwok exited:\n%s", proc.tail())
	}
	return &Kwok{proc: proc}, nil
}

// withContainerIDs makes kwok's pod-ready stage report container IDs, as a
// kubelet does: the cgroup agent identifies containers by them.
func withContainerIDs(stages string) string {
	const running = "        name: {{ .name | Quote }}\n        ready: true\n        restartCount: 0\n        state:\n          running:"
	const withID = "        name: {{ .name | Quote }}\n        containerID: {{ printf \"kwok://%s-%s\" $.metadata.uid .name | Quote }}\n        ready: true\n        restartCount: 0\n        state:\n          running:"
	return strings.Replace(stages, running, withID, 1)
}

func kwokConfig(stages string, forwards map[int32]string) string {
	var b strings.Builder
	b.WriteString(stages)
	if len(forwards) > 0 {
		b.WriteString("\n---\napiVersion: kwok.x-k8s.io/v1alpha1\nkind: ClusterPortForward\nmetadata:\n  name: wafsweep-stand-ins\nspec:\n  forwards:\n")
		ports := make([]int, 0, len(forwards))
		for p := range forwards {
			ports = append(ports, int(p))
		}
		sort.Ints(ports)
		for _, p := range ports {
			host, port, _ := strings.Cut(forwards[int32(p)], ":")
			fmt.Fprintf(&b, "  - ports: [%d]\n    target:\n      address: %q\n      port: %s\n", p, host, port)
		}
	}
	return b.String()
}

// CreateFakeNodes registers nodes kwok manages and waits until they are
// Ready.
func (cp *ControlPlane) CreateFakeNodes(ctx context.Context, nodes ...FakeNode) error {
	for _, n := range nodes {
		labels := map[string]string{"kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux", "type": "kwok"}
		for k, v := range n.Labels {
			labels[k] = v
		}
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(n.CPU),
			corev1.ResourceMemory: resource.MustParse(n.Memory),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels, Annotations: map[string]string{FakeNodeAnnotation: "fake"}},
			Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if n.Tainted {
			node.Spec.Taints = []corev1.Taint{{Key: FakeNodeTaintKey, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}
		}
		if _, err := cp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating fake node %s: %w", n.Name, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, n := range nodes {
			node, err := cp.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil || !nodeReady(node) {
				return false, nil
			}
		}
		return true, nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
