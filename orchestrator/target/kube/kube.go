// Package kube is the Kubernetes target: each configuration runs as an
// Envoy Deployment (with the corazawaf module for WAF flavors) on a proxy
// node, in front of a backend, loaded by the pod program's load generator
// (package remoteload: package loadgen's window-exact steps) on another node,
// all in a namespace of the sweep's own. The same sweep, the same datasets
// as the local target; the load goes pod to pod by pod IP, and only control
// (Envoy's admin and the pre-check, the load generator's API, the cgroup agents)
// goes through port-forwards.
//
// Prepare deploys what every configuration shares (namespace, cgroup
// agents, backend, load generator) and once a vanilla Envoy, to verify and record
// that the proxy is Guaranteed with an exclusive cpuset before any number
// is taken. Deploy rolls Envoy to a configuration's bootstrap; Teardown
// scales it to zero; Close deletes the namespace.
package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/target"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/cgroup"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/deploy"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/portforward"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/rollout"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/spec"
)

// Options configures a Kubernetes target.
type Options struct {
	// Name is dataset.TargetKube or dataset.TargetKind.
	Name   string
	Config *rest.Config
	Spec   spec.Options
	// RolloutTimeout bounds each rollout; default 5 minutes.
	RolloutTimeout time.Duration
	// ReadyTimeout bounds the wait for Envoy's /ready after its rollout;
	// default 2 minutes (the full CRS compiles at start).
	ReadyTimeout time.Duration
	// AllowSharedCPUs accepts a proxy cpuset that is not exclusive (the
	// kubelet's CPU manager policy is not static), noting it in the
	// metadata instead of refusing to measure.
	AllowSharedCPUs bool
	// NodesShareCPUs says the nodes are containers on one machine (kind):
	// a cpuset exclusive within a node may overlap another node's, and the
	// metadata says so for every exclusive assignment.
	NodesShareCPUs bool
	// Notes are added to the metadata.
	Notes []string
	// Progress receives a line per deployment step (nil: discarded).
	Progress io.Writer
}

// Kube is the Kubernetes target.
type Kube struct {
	opts    Options
	client  kubernetes.Interface
	applier deploy.Applier

	mu         sync.Mutex
	prepared   bool
	backendPod *corev1.Pod
	fortioPod  *corev1.Pod
	fortio     *portforward.Tunnel
	agents     map[string]*portforward.Tunnel // node name -> agent tunnel
	assignment map[string]string
	placed     map[string]placement // role -> its verified placement
	proxyCPU   cgroup.NodeCPU       // the proxy node's processor, read at Prepare
	tlsApplied string               // fingerprint of the certificate in the TLS Secret
	notes      []string
}

// New checks the options; nothing is created before Prepare.
func New(opts Options) (*Kube, error) {
	opts.Spec = opts.Spec.Defaults()
	if opts.RolloutTimeout == 0 {
		opts.RolloutTimeout = 5 * time.Minute
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 2 * time.Minute
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	var errs []error
	switch opts.Name {
	case dataset.TargetKube, dataset.TargetKind:
	default:
		errs = append(errs, fmt.Errorf("target name %q: use %s or %s", opts.Name, dataset.TargetKube, dataset.TargetKind))
	}
	if opts.Config == nil {
		errs = append(errs, errors.New("no Kubernetes client configuration: give --kubeconfig"))
	}
	errs = append(errs, opts.Spec.Validate())
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Kube{
		opts: opts, client: client,
		applier: deploy.Applier{Client: client, FieldManager: spec.FieldManager},
		agents:  map[string]*portforward.Tunnel{},
	}, nil
}

// Client is the target's Kubernetes client.
func (k *Kube) Client() kubernetes.Interface { return k.client }

// Name implements target.Target.
func (k *Kube) Name() string { return k.opts.Name }

// Describe implements target.Target: after Prepare, the nodes, cpusets and
// the QoS verification.
func (k *Kube) Describe() target.Description {
	k.mu.Lock()
	defer k.mu.Unlock()
	d := target.Description{CoreAssignment: map[string]string{}, CPUModel: k.proxyCPU.Model, Cores: k.proxyCPU.CPUs}
	for role, a := range k.assignment {
		d.CoreAssignment[role] = a
	}
	d.Notes = append(append(d.Notes, k.opts.Notes...), k.notes...)
	d.Notes = append(d.Notes, "load from an in-cluster load generator pod, pod to pod: the local target's window-exact steps (Fortio as a library), run in the pod and driven through a port-forward; the proxy's CPU is sampled when each window edge reaches the orchestrator, a port-forward's latency after it happened",
		"proxy_rss_* columns hold the Envoy container's working set (cgroup usage minus inactive file pages, as the kubelet counts it), not a process RSS; the lifetime peak is the cgroup's, page cache included")
	if !k.prepared {
		d.Notes = append(d.Notes, "kubernetes target described before Prepare: placement not verified")
	}
	return d
}

func (k *Kube) progress(format string, args ...any) {
	fmt.Fprintf(k.opts.Progress, "[%s] "+format+"\n", append([]any{k.opts.Name}, args...)...)
}

// CheckModule is satisfied by the image (the module is built into it); it
// rejects the flavors the image cannot run.
func (k *Kube) CheckModule(p plan.Plan) error { return CheckPlan(p) }

// Flavors are the flavors the Kubernetes targets deploy: the image carries
// Envoy and the corazawaf builds only (neither nginx nor the no-op module,
// which measures Envoy's share of a module's cost on the local target).
var flavors = []string{plan.FlavorDirect, plan.FlavorEnvoy, plan.FlavorWAF, plan.FlavorWAFAccelerated}

// CheckPlan rejects, before anything is built or deployed, a plan with
// a flavor the Kubernetes targets cannot run.
func CheckPlan(p plan.Plan) error {
	var bad []string
	for _, f := range p.Flavors {
		if !slices.Contains(flavors, f) {
			bad = append(bad, f)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("flavors %s are not available on the Kubernetes targets (their image has Envoy and the corazawaf builds only): use %s, or the local target",
			strings.Join(bad, ", "), strings.Join(flavors, ", "))
	}
	return nil
}

// Prepare creates the namespace, the cgroup agents, the backend and the
// load generator, then deploys a vanilla Envoy once to verify and record
// its QoS class and cpuset, and stops it again.
func (k *Kube) Prepare(ctx context.Context) error {
	o := k.opts.Spec
	k.progress("preparing namespace %s", o.Namespace)
	if err := k.applier.Namespace(ctx, spec.Namespace(o)); err != nil {
		return err
	}
	if _, err := k.applier.DaemonSet(ctx, spec.AgentDaemonSet(o)); err != nil {
		return err
	}
	if _, err := k.applier.Deployment(ctx, spec.BackendDeployment(o, "")); err != nil {
		return err
	}
	if _, err := k.applier.Deployment(ctx, spec.FortioDeployment(o)); err != nil {
		return err
	}
	if _, err := rollout.DaemonSet(ctx, k.client, o.Namespace, spec.Agent, k.opts.RolloutTimeout); err != nil {
		return err
	}
	for _, name := range []string{spec.Backend, spec.Fortio} {
		if _, err := rollout.Deployment(ctx, k.client, o.Namespace, name, k.opts.RolloutTimeout); err != nil {
			return err
		}
	}
	backendPod, err := rollout.RunningPod(ctx, k.client, o.Namespace, spec.Selector(spec.Backend), "", "", k.opts.RolloutTimeout)
	if err != nil {
		return err
	}
	fortioPod, err := rollout.RunningPod(ctx, k.client, o.Namespace, spec.Selector(spec.Fortio), "", "", k.opts.RolloutTimeout)
	if err != nil {
		return err
	}
	fortioTunnel, err := portforward.Open(k.opts.Config, k.client, o.Namespace, fortioPod.Name, o.Ports.Fortio)
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.backendPod, k.fortioPod, k.fortio = backendPod, fortioPod, fortioTunnel
	k.assignment = map[string]string{}
	k.placed = map[string]placement{}
	k.notes = nil
	k.mu.Unlock()

	var errs []error
	for _, r := range []struct {
		role, container string
		pod             *corev1.Pod
		cores           int
	}{
		{"loadgen", spec.Fortio, fortioPod, o.Loadgen.Cores()},
		{"backend", spec.Backend, backendPod, o.Backend.Cores()},
	} {
		p, err := k.place(ctx, r.pod, r.container, r.cores)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		k.record(r.role, p)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	k.notePlatform(ctx, backendPod.Spec.NodeName, fortioPod.Spec.NodeName)

	// One vanilla Envoy before the sweep: its verified placement goes into
	// metadata.json, which is written before the first configuration.
	k.progress("verifying the proxy's placement with a vanilla Envoy")
	probe, err := k.deployEnvoy(ctx, target.Deployment{Config: plan.Config{Flavor: plan.FlavorEnvoy}})
	if err != nil {
		return fmt.Errorf("verifying the proxy's placement: %w", err)
	}
	k.record("proxy", probe.placement)
	k.notePlatform(ctx, probe.placement.Node)
	k.readProxyCPU(ctx, probe.placement.Node)
	if err := probe.Teardown(); err != nil {
		return err
	}
	k.mu.Lock()
	k.prepared = true
	k.mu.Unlock()
	return nil
}

// record writes a role's verified placement into the description.
func (k *Kube) record(role string, p placement) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p.nodesShareCPUs = k.opts.NodesShareCPUs
	k.placed[role] = p
	k.assignment[role] = p.String()
	k.notes = append(k.notes, fmt.Sprintf("%s: pod %s on node %s, QoS %s, cpuset %s (%s)", role, p.Pod, p.Node, p.QOSClass, p.CPUs, p.exclusivity()))
}

// readProxyCPU asks the proxy node's agent for its processor, which the
// metadata names instead of this machine's. A node it cannot be read from
// is named "unknown", with the reason in the notes.
func (k *Kube) readProxyCPU(ctx context.Context, node string) {
	var cpu cgroup.NodeCPU
	agent, err := k.agent(ctx, node)
	if err == nil {
		cpu, err = agent.CPU(ctx)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		cpu = cgroup.NodeCPU{Model: "unknown"}
		k.notes = append(k.notes, fmt.Sprintf("proxy node %s: processor not read: %v", node, err))
	}
	k.proxyCPU = cpu
}

// notePlatform records the nodes' platform details once per node.
func (k *Kube) notePlatform(ctx context.Context, nodes ...string) {
	for _, name := range nodes {
		prefix := "node " + name + ": "
		k.mu.Lock()
		seen := slices.ContainsFunc(k.notes, func(n string) bool { return strings.HasPrefix(n, prefix) })
		k.mu.Unlock()
		if seen || name == "" {
			continue
		}
		n, err := k.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		info := n.Status.NodeInfo
		cpu := n.Status.Capacity[corev1.ResourceCPU]
		alloc := n.Status.Allocatable[corev1.ResourceCPU]
		note := fmt.Sprintf("%sinstance type %s, zone %s, %s CPUs (%s allocatable), kernel %s, %s, kubelet %s, runtime %s, CPU manager policy %s",
			prefix, orUnknown(n.Labels["node.kubernetes.io/instance-type"]), orUnknown(n.Labels["topology.kubernetes.io/zone"]),
			cpu.String(), alloc.String(), orUnknown(info.KernelVersion), orUnknown(info.OSImage), orUnknown(info.KubeletVersion),
			orUnknown(info.ContainerRuntimeVersion), k.cpuManagerPolicy(ctx, name))
		k.mu.Lock()
		k.notes = append(k.notes, note)
		k.mu.Unlock()
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// Close stops the port-forwards and deletes the sweep's namespace with
// everything in it, waiting until its pods are gone.
func (k *Kube) Close(ctx context.Context) error {
	k.mu.Lock()
	tunnels := []*portforward.Tunnel{k.fortio}
	for _, t := range k.agents {
		tunnels = append(tunnels, t)
	}
	k.fortio, k.agents = nil, map[string]*portforward.Tunnel{}
	k.mu.Unlock()
	for _, t := range tunnels {
		if t != nil {
			t.Close()
		}
	}
	k.progress("deleting namespace %s", k.opts.Spec.Namespace)
	return k.applier.DeleteNamespace(ctx, k.opts.Spec.Namespace, k.opts.RolloutTimeout)
}

// agent is the cgroup agent client of a node, through a port-forward
// opened on first use and reopened when it broke.
func (k *Kube) agent(ctx context.Context, node string) (cgroup.Client, error) {
	k.mu.Lock()
	t := k.agents[node]
	k.mu.Unlock()
	if t != nil && t.Err() == nil {
		return cgroup.Client{BaseURL: t.URL(k.opts.Spec.Ports.Agent)}, nil
	}
	pods, err := k.client.CoreV1().Pods(k.opts.Spec.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(spec.Selector(spec.Agent)).String(),
		FieldSelector: "spec.nodeName=" + node,
	})
	if err != nil {
		return cgroup.Client{}, fmt.Errorf("finding the cgroup agent on node %s: %w", node, err)
	}
	var pod *corev1.Pod
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil && rollout.PodReady(p) {
			pod = p
		}
	}
	if pod == nil {
		return cgroup.Client{}, fmt.Errorf("no ready cgroup agent on node %s", node)
	}
	t, err = portforward.Open(k.opts.Config, k.client, pod.Namespace, pod.Name, k.opts.Spec.Ports.Agent)
	if err != nil {
		return cgroup.Client{}, err
	}
	k.mu.Lock()
	if old := k.agents[node]; old != nil {
		go old.Close()
	}
	k.agents[node] = t
	k.mu.Unlock()
	return cgroup.Client{BaseURL: t.URL(k.opts.Spec.Ports.Agent)}, nil
}

// readBackendStats reads the backend's counts so far from its stats
// listener (loopback in the pod) through a port-forward of its own.
func (k *Kube) readBackendStats(ctx context.Context) (backend.Stats, error) {
	k.mu.Lock()
	pod := k.backendPod
	k.mu.Unlock()
	port := k.opts.Spec.Ports.BackendStats
	t, err := portforward.Open(k.opts.Config, k.client, pod.Namespace, pod.Name, port)
	if err != nil {
		return backend.Stats{}, err
	}
	defer t.Close()
	return backend.ReadStats(ctx, t.URL(port))
}

// readContainer reads a container's cgroup through its node's agent.
func (k *Kube) readContainer(ctx context.Context, pod *corev1.Pod, container string) (cgroup.Reading, error) {
	return k.readContainerFile(ctx, pod, container, "")
}

// readContainerFile is readContainer with the size of file inside the
// container ("" for none).
func (k *Kube) readContainerFile(ctx context.Context, pod *corev1.Pod, container, file string) (cgroup.Reading, error) {
	id, err := containerID(pod, container)
	if err != nil {
		return cgroup.Reading{}, err
	}
	a, err := k.agent(ctx, pod.Spec.NodeName)
	if err != nil {
		return cgroup.Reading{}, err
	}
	return a.ReadWithFile(ctx, string(pod.UID), id, file)
}

// containerID is the runtime's ID of a container, without its scheme.
func containerID(pod *corev1.Pod, container string) (string, error) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container {
			if _, id, ok := strings.Cut(cs.ContainerID, "://"); ok && id != "" {
				return id, nil
			}
			return "", fmt.Errorf("pod %s: container %s has no runtime ID yet", pod.Name, container)
		}
	}
	return "", fmt.Errorf("pod %s has no container %s", pod.Name, container)
}
