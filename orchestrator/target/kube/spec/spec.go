// Package spec builds the objects the Kubernetes targets apply, as typed
// apply configurations: the sweep's namespace, the Envoy Deployment and its
// bootstrap ConfigMap, the backend and the load generator Deployments, and
// the cgroup agent DaemonSet. Pure functions of Options, so that what the
// orchestrator applies, the manifests/ kustomize bases and the tests agree.
//
// Every container gets requests equal to limits for CPU and memory, so
// every pod is in the Guaranteed QoS class; the containers that are
// measured (Envoy, Fortio, the backend) get whole cores, which the kubelet's
// static CPU manager turns into an exclusive cpuset.
package spec

import (
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// FieldManager owns every field the orchestrator applies.
const FieldManager = "wafsweep"

// Labels and annotations.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelSweep marks what one sweep created, so teardown finds it all.
	LabelSweep = "wafsweep.io/sweep"
	// AnnotationBootstrapHash on the Envoy pod template: a new bootstrap is
	// a new template, hence a rollout.
	AnnotationBootstrapHash = "wafsweep.io/bootstrap-hash"
	// AnnotationConcurrency records Envoy's --concurrency on its pod.
	AnnotationConcurrency = "wafsweep.io/concurrency"
	// AnnotationTLSFingerprint names the run's certificate (its SHA-256) on
	// the TLS Secret and on the pods that mount it.
	AnnotationTLSFingerprint = "wafsweep.io/tls-fingerprint"
)

// Node labels select the node pools: the proxy on its own nodes, the load
// generator and the backend on others. Two keys rather than two values of
// one key, so that a single test node can carry both.
const (
	NodeLabelProxy   = "wafsweep.io/proxy"
	NodeLabelLoadgen = "wafsweep.io/loadgen"
)

// Component names, also the Deployment and DaemonSet names.
const (
	Envoy   = "envoy"
	Backend = "backend"
	Fortio  = "fortio"
	Agent   = "cgroup-agent"
)

// Paths inside the image (see package image).
const (
	EnvoyPath     = "/usr/local/bin/envoy"
	PodBinaryPath = "/usr/local/bin/wafsweep-pod"
	ModulePath    = "/usr/local/lib/wafsweep/libcorazawaf.so"
	// AcceleratedModulePath is the accelerated build, in images built for
	// a plan with waf-accelerated; HyperscanCacheDir holds its Hyperscan
	// databases, compiled ahead of time on the machine that built the
	// image (the module compiles what it does not find there, or cannot
	// run on the node's processor).
	AcceleratedModulePath = "/usr/local/lib/wafsweep/libcorazawaf-accelerated.so"
	HyperscanCacheDir     = "/usr/local/lib/wafsweep/hyperscan"
	// BootstrapDir is where the bootstrap ConfigMap is mounted.
	BootstrapDir  = "/etc/envoy/bootstrap"
	BootstrapFile = "envoy.json"
	// WAFLogDir is a writable emptyDir for the audit log tier.
	WAFLogDir = "/var/log/corazawaf"
	// HostCgroupDir is where the agent sees the node's /sys/fs/cgroup.
	HostCgroupDir = "/host/sys/fs/cgroup"
	// TLSDir is where TLSSecretName is mounted: TLSCertFile and TLSKeyFile.
	TLSDir        = "/etc/wafsweep/tls"
	TLSSecretName = "wafsweep-tls"
	TLSCertFile   = TLSDir + "/" + corev1.TLSCertKey
	TLSKeyFile    = TLSDir + "/" + corev1.TLSPrivateKeyKey
)

// Ports of the components. On a pod network they may be the defaults; with
// HostNetwork they must be free on the node.
type Ports struct {
	EnvoyListen, EnvoyAdmin, Backend, Fortio, Agent int32
	// BackendTLS is where the backend serves TLS in a TLS sweep (the direct
	// flavor's edge); Backend stays in clear for the proxies.
	BackendTLS int32
	// BackendStats is the backend's stats listener, on the pod's loopback,
	// read through a port-forward.
	BackendStats int32
}

// DefaultPorts are the ports on a pod network.
func DefaultPorts() Ports {
	return Ports{EnvoyListen: 10000, EnvoyAdmin: 9901, Backend: 8080, Fortio: 8088, Agent: 9090, BackendTLS: 8443, BackendStats: 8081}
}

// Size is a container's CPU and memory, requests equal to limits.
type Size struct {
	// MilliCPU: a multiple of 1000 for the measured containers, so the
	// static CPU manager gives them exclusive cores.
	MilliCPU int64
	Memory   resource.Quantity
}

// Cores is the whole number of cores of s (0 for a fractional size).
func (s Size) Cores() int {
	if s.MilliCPU%1000 != 0 {
		return 0
	}
	return int(s.MilliCPU / 1000)
}

func (s Size) resources() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(s.MilliCPU, resource.DecimalSI),
		corev1.ResourceMemory: s.Memory,
	}
}

// Options is everything the objects depend on.
type Options struct {
	Namespace  string
	SweepID    string // value of LabelSweep
	Image      string
	PullPolicy corev1.PullPolicy
	Proxy      Size // Envoy; its cores are also --concurrency
	Loadgen    Size // the load generator (Fortio as a library)
	Backend    Size
	Agent      Size // the cgroup agent, small and fractional: the shared pool
	Ports      Ports
	// HostNetwork runs every pod in the node's network namespace and binds
	// and addresses everything at 127.0.0.1: a single-node test cluster
	// without a pod network.
	HostNetwork bool
	// SingleNode drops the anti-affinity that keeps the load generator off
	// the proxy's node (a one-node cluster could not schedule it).
	SingleNode bool
	// Tolerations are added to every pod (tainted node pools, fake nodes).
	Tolerations []corev1.Toleration
	// EnvoyEnv is added to Envoy's container, KEY=VALUE each (a plan's
	// plan.Plan.EnvoyEnv: the module's Go runtime knobs).
	EnvoyEnv []string
}

// Defaults fills in what is unset: 2 proxy cores, 2 load generator cores,
// 1 backend core.
func (o Options) Defaults() Options {
	if o.Namespace == "" {
		o.Namespace = "wafsweep"
	}
	if o.PullPolicy == "" {
		o.PullPolicy = corev1.PullNever
	}
	def := func(s *Size, milli int64, mem string) {
		if s.MilliCPU == 0 {
			s.MilliCPU = milli
		}
		if s.Memory.IsZero() {
			s.Memory = resource.MustParse(mem)
		}
	}
	def(&o.Proxy, 2000, "1Gi")
	def(&o.Loadgen, 2000, "1Gi")
	def(&o.Backend, 1000, "256Mi")
	def(&o.Agent, 100, "64Mi")
	if o.Ports == (Ports{}) {
		o.Ports = DefaultPorts()
	}
	if o.Ports.BackendTLS == 0 {
		o.Ports.BackendTLS = DefaultPorts().BackendTLS
	}
	if o.Ports.BackendStats == 0 {
		o.Ports.BackendStats = DefaultPorts().BackendStats
	}
	return o
}

// Validate reports every problem at once.
func (o Options) Validate() error {
	var errs []error
	if o.Image == "" {
		errs = append(errs, errors.New("no image: build one (package image) and name it"))
	}
	if o.Proxy.Cores() < 1 {
		errs = append(errs, fmt.Errorf("proxy CPU %dm: give Envoy whole cores, so it gets exclusive CPUs and --concurrency matches them", o.Proxy.MilliCPU))
	}
	if o.Loadgen.MilliCPU < 1000 && !o.SingleNode {
		errs = append(errs, fmt.Errorf("load generator CPU %dm: give Fortio at least one core", o.Loadgen.MilliCPU))
	}
	if o.Agent.Cores() > 0 {
		errs = append(errs, fmt.Errorf("agent CPU %dm: keep the agent fractional, in the shared pool, off the measured cores", o.Agent.MilliCPU))
	}
	return errors.Join(errs...)
}

// bindHost is the address servers reachable from other pods listen on.
func (o Options) bindHost() string {
	if o.HostNetwork {
		return "127.0.0.1"
	}
	return "0.0.0.0"
}

func (o Options) labels(component string) map[string]string {
	l := map[string]string{LabelName: "wafsweep", LabelComponent: component, LabelManagedBy: FieldManager}
	if o.SweepID != "" {
		l[LabelSweep] = o.SweepID
	}
	return l
}

// Selector is the label selector of a component's pods.
func Selector(component string) map[string]string {
	return map[string]string{LabelName: "wafsweep", LabelComponent: component}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
