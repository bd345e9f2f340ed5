package spec

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// hostnameTopology spreads pods over nodes.
const hostnameTopology = "kubernetes.io/hostname"

// nobody runs every container: nothing needs root. The agent reads
// world-readable cgroup files, and the /proc entries of the processes it
// measures, which run as nobody too.
const nobody = 65534

// Namespace is the sweep's own namespace: deleting it deletes everything.
func Namespace(o Options) *corev1ac.NamespaceApplyConfiguration {
	return corev1ac.Namespace(o.Namespace).WithLabels(o.labels("namespace"))
}

// BootstrapConfigMapName names the immutable ConfigMap of one bootstrap
// after its hash: a pod always mounts exactly the bootstrap its template
// names, never a half-updated one.
func BootstrapConfigMapName(hash string) string {
	if len(hash) > 12 {
		hash = hash[:12]
	}
	return "envoy-bootstrap-" + hash
}

// BootstrapConfigMap holds Envoy's bootstrap JSON.
func BootstrapConfigMap(o Options, hash string, bootstrapJSON []byte) *corev1ac.ConfigMapApplyConfiguration {
	labels := o.labels(Envoy)
	labels[AnnotationBootstrapHash] = shortHash(hash)
	return corev1ac.ConfigMap(BootstrapConfigMapName(hash), o.Namespace).
		WithLabels(labels).
		WithAnnotations(map[string]string{AnnotationBootstrapHash: hash}).
		WithImmutable(true).
		WithData(map[string]string{BootstrapFile: string(bootstrapJSON)})
}

// shortHash fits a label value (63 characters at most).
func shortHash(hash string) string {
	if len(hash) > 63 {
		return hash[:63]
	}
	return hash
}

// EnvoyDeployment runs Envoy with the module on the proxy pool: one
// replica, Recreate (the old pod releases its exclusive cores before the new
// one asks for them), --concurrency equal to its cores. replicas is 0 to
// stop it between configurations. tlsFingerprint, when set, mounts the
// run's certificate (TLSSecret) at TLSDir for a bootstrap that terminates
// TLS, and marks the pod with it: a new certificate is a new pod.
func EnvoyDeployment(o Options, hash string, replicas int32, tlsFingerprint string) *appsv1ac.DeploymentApplyConfiguration {
	cores := o.Proxy.Cores()
	envoy := container(o, Envoy, o.Proxy).
		WithCommand(EnvoyPath,
			"-c", BootstrapDir+"/"+BootstrapFile,
			"--concurrency", strconv.Itoa(cores),
			"--disable-hot-restart",
			// The module's own lines at load (its runtime sizing, the
			// accelerator's engine and database) are info; Envoy's are
			// kept to warnings.
			"-l", "warn", "--component-log-level", "dynamic_modules:info").
		WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(o.Ports.EnvoyListen)).
		// The admin interface listens on 127.0.0.1 inside the pod, reached
		// only through a port-forward: the kubelet probes the listener.
		WithReadinessProbe(tcpProbe(o, o.Ports.EnvoyListen)).
		WithEnv(envoyEnv(o)...).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName("bootstrap").WithMountPath(BootstrapDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName("waf-log").WithMountPath(WAFLogDir),
			// Coraza checks at start that it can create a file in /tmp;
			// the root filesystem is read-only.
			corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp"),
		)
	pod := podSpec(o, envoy).
		WithNodeSelector(map[string]string{NodeLabelProxy: "true"}).
		WithVolumes(
			corev1ac.Volume().WithName("bootstrap").WithConfigMap(
				corev1ac.ConfigMapVolumeSource().WithName(BootstrapConfigMapName(hash))),
			corev1ac.Volume().WithName("waf-log").WithEmptyDir(
				corev1ac.EmptyDirVolumeSource().WithSizeLimit(resourceQuantity("256Mi"))),
			corev1ac.Volume().WithName("tmp").WithEmptyDir(
				corev1ac.EmptyDirVolumeSource().WithSizeLimit(resourceQuantity("64Mi"))),
		)
	if !o.SingleNode {
		pod.WithAffinity(antiAffinity(Fortio, Backend))
	}
	annotations := map[string]string{
		AnnotationBootstrapHash: hash,
		AnnotationConcurrency:   strconv.Itoa(cores),
	}
	mountTLS(pod, annotations, tlsFingerprint)
	template := corev1ac.PodTemplateSpec().
		WithLabels(o.labels(Envoy)).
		WithAnnotations(annotations).
		WithSpec(pod)
	return appsv1ac.Deployment(Envoy, o.Namespace).
		WithLabels(o.labels(Envoy)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(Selector(Envoy))).
			WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)).
			WithProgressDeadlineSeconds(300).
			WithRevisionHistoryLimit(2).
			WithTemplate(template))
}

// BackendDeployment runs the benchmark backend on the load generator pool.
// It accepts HTTP/2 in clear beside HTTP/1.1: the proxies speak HTTP/1.1 to
// it, the direct flavor's load may speak h2c. tlsFingerprint, when set, also
// serves TLS on Ports.BackendTLS with the run's certificate (TLSSecret), the
// direct flavor's edge in a TLS sweep, and marks the pod with it. Its
// counts are on Ports.BackendStats, on the pod's loopback.
func BackendDeployment(o Options, tlsFingerprint string) *appsv1ac.DeploymentApplyConfiguration {
	args := []string{"backend", "--listen", o.bindHost() + ":" + itoa(o.Ports.Backend), "--http2",
		"--stats-listen", "127.0.0.1:" + itoa(o.Ports.BackendStats)}
	ports := []*corev1ac.ContainerPortApplyConfiguration{corev1ac.ContainerPort().WithName("http").WithContainerPort(o.Ports.Backend)}
	if tlsFingerprint != "" {
		args = append(args, "--tls-listen", o.bindHost()+":"+itoa(o.Ports.BackendTLS), "--tls-cert", TLSCertFile, "--tls-key", TLSKeyFile)
		ports = append(ports, corev1ac.ContainerPort().WithName("https").WithContainerPort(o.Ports.BackendTLS))
	}
	backend := container(o, Backend, o.Backend).
		WithCommand(append([]string{PodBinaryPath}, args...)...).
		WithPorts(ports...).
		WithReadinessProbe(tcpProbe(o, o.Ports.Backend))
	pod := podSpec(o, backend).WithNodeSelector(map[string]string{NodeLabelLoadgen: "true"})
	if !o.SingleNode {
		pod.WithAffinity(antiAffinity(Envoy))
	}
	annotations := map[string]string{}
	mountTLS(pod, annotations, tlsFingerprint)
	d := singleReplica(o, Backend, pod)
	if len(annotations) > 0 {
		d.Spec.Template.WithAnnotations(annotations)
	}
	return d
}

// TLSSecret holds the run's server certificate chain and key, PEM, which
// the Envoy pods (and the backend, for the direct flavor) mount at TLSDir.
// The key never leaves the sweep's namespace; the certificate is valid for
// the sweep's Host name and expires within days.
func TLSSecret(o Options, certPEM, keyPEM []byte, fingerprint string) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(TLSSecretName, o.Namespace).
		WithLabels(o.labels("tls")).
		WithAnnotations(map[string]string{AnnotationTLSFingerprint: fingerprint}).
		WithType(corev1.SecretTypeTLS).
		WithData(map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM})
}

// mountTLS mounts TLSSecret read-only at TLSDir in the pod's containers
// and records fingerprint among the pod template's annotations; nothing
// without a fingerprint.
func mountTLS(pod *corev1ac.PodSpecApplyConfiguration, annotations map[string]string, fingerprint string) {
	if fingerprint == "" {
		return
	}
	for i := range pod.Containers { // the pod holds copies of its containers
		pod.Containers[i].WithVolumeMounts(corev1ac.VolumeMount().WithName("tls").WithMountPath(TLSDir).WithReadOnly(true))
	}
	// Readable by the containers' user (nobody) only: 0400 and its group.
	pod.WithVolumes(corev1ac.Volume().WithName("tls").WithSecret(
		corev1ac.SecretVolumeSource().WithSecretName(TLSSecretName).WithDefaultMode(0o440)))
	pod.WithSecurityContext(corev1ac.PodSecurityContext().WithFSGroup(nobody))
	annotations[AnnotationTLSFingerprint] = fingerprint
}

// FortioDeployment runs the load generator on the load generator pool,
// never on the proxy's node: the pod program's loadgen server, which runs
// each step as package loadgen does on the local target (Fortio as a
// library, window-exact). Its API listens on 127.0.0.1: it is driven
// through a port-forward only, and nobody else in the cluster can start
// load from it.
func FortioDeployment(o Options) *appsv1ac.DeploymentApplyConfiguration {
	fortio := container(o, Fortio, o.Loadgen).
		WithCommand(PodBinaryPath, "loadgen", "--listen", "127.0.0.1:"+itoa(o.Ports.Fortio)).
		WithReadinessProbe(execProbe("http://127.0.0.1:" + itoa(o.Ports.Fortio) + "/healthz")).
		// A TLS step's CA is written here for Fortio, which reads a
		// file; the root filesystem is read-only.
		WithVolumeMounts(corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp"))
	pod := podSpec(o, fortio).
		WithNodeSelector(map[string]string{NodeLabelLoadgen: "true"}).
		WithVolumes(corev1ac.Volume().WithName("tmp").WithEmptyDir(
			corev1ac.EmptyDirVolumeSource().WithSizeLimit(resourceQuantity("16Mi"))))
	if !o.SingleNode {
		pod.WithAffinity(antiAffinity(Envoy))
	}
	return singleReplica(o, Fortio, pod)
}

// AgentDaemonSet runs the cgroup agent on every proxy and load generator
// node: it reads other containers' cgroup files from the node's
// /sys/fs/cgroup, from the shared CPU pool, so reading the proxy's usage
// never runs anything on the proxy's exclusive cores.
func AgentDaemonSet(o Options) *appsv1ac.DaemonSetApplyConfiguration {
	agent := container(o, Agent, o.Agent).
		WithCommand(PodBinaryPath, "cgroup-agent", "--listen", "127.0.0.1:"+itoa(o.Ports.Agent), "--cgroup-root", HostCgroupDir).
		WithReadinessProbe(execProbe("http://127.0.0.1:" + itoa(o.Ports.Agent) + "/healthz")).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("cgroup").WithMountPath(HostCgroupDir).WithReadOnly(true))
	pod := podSpec(o, agent).
		// The node's PID namespace: the agent reads the write counters of
		// the processes a container's cgroup lists, and the audit log's
		// size through them (same user, nobody; no capability).
		WithHostPID(true).
		WithAffinity(corev1ac.Affinity().WithNodeAffinity(corev1ac.NodeAffinity().
			WithRequiredDuringSchedulingIgnoredDuringExecution(corev1ac.NodeSelector().WithNodeSelectorTerms(
				// Terms are ORed: proxy nodes or load generator nodes.
				corev1ac.NodeSelectorTerm().WithMatchExpressions(corev1ac.NodeSelectorRequirement().
					WithKey(NodeLabelProxy).WithOperator(corev1.NodeSelectorOpIn).WithValues("true")),
				corev1ac.NodeSelectorTerm().WithMatchExpressions(corev1ac.NodeSelectorRequirement().
					WithKey(NodeLabelLoadgen).WithOperator(corev1.NodeSelectorOpIn).WithValues("true")),
			)))).
		WithVolumes(corev1ac.Volume().WithName("cgroup").WithHostPath(
			corev1ac.HostPathVolumeSource().WithPath("/sys/fs/cgroup").WithType(corev1.HostPathDirectory)))
	return appsv1ac.DaemonSet(Agent, o.Namespace).
		WithLabels(o.labels(Agent)).
		WithSpec(appsv1ac.DaemonSetSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(Selector(Agent))).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(o.labels(Agent)).WithSpec(pod)))
}

func singleReplica(o Options, component string, pod *corev1ac.PodSpecApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	return appsv1ac.Deployment(component, o.Namespace).
		WithLabels(o.labels(component)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(Selector(component))).
			WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)).
			WithProgressDeadlineSeconds(300).
			WithRevisionHistoryLimit(2).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(o.labels(component)).WithSpec(pod)))
}

// container is one Guaranteed container: requests equal limits.
func container(o Options, name string, size Size) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName(name).
		WithImage(o.Image).
		WithImagePullPolicy(o.PullPolicy).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(size.resources()).
			WithLimits(size.resources())).
		WithSecurityContext(corev1ac.SecurityContext().
			WithRunAsUser(nobody).
			WithRunAsGroup(nobody).
			WithRunAsNonRoot(true).
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop(corev1.Capability("ALL"))))
}

func podSpec(o Options, containers ...*corev1ac.ContainerApplyConfiguration) *corev1ac.PodSpecApplyConfiguration {
	pod := corev1ac.PodSpec().
		WithContainers(containers...).
		WithHostNetwork(o.HostNetwork).
		// No API access and no service environment: nothing in these pods
		// talks to the cluster.
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithTerminationGracePeriodSeconds(5)
	for _, t := range o.Tolerations {
		tol := corev1ac.Toleration().WithKey(t.Key).WithOperator(t.Operator).WithValue(t.Value).WithEffect(t.Effect)
		if t.TolerationSeconds != nil {
			tol.WithTolerationSeconds(*t.TolerationSeconds)
		}
		pod.WithTolerations(tol)
	}
	return pod
}

// antiAffinity keeps a pod off the nodes running any of components.
func antiAffinity(components ...string) *corev1ac.AffinityApplyConfiguration {
	return corev1ac.Affinity().WithPodAntiAffinity(corev1ac.PodAntiAffinity().
		WithRequiredDuringSchedulingIgnoredDuringExecution(corev1ac.PodAffinityTerm().
			WithTopologyKey(hostnameTopology).
			WithLabelSelector(metav1ac.LabelSelector().WithMatchExpressions(metav1ac.LabelSelectorRequirement().
				WithKey(LabelComponent).WithOperator(metav1.LabelSelectorOpIn).WithValues(components...)))))
}

func tcpProbe(o Options, port int32) *corev1ac.ProbeApplyConfiguration {
	tcp := corev1ac.TCPSocketAction().WithPort(intstr.FromInt32(port))
	if o.HostNetwork {
		// The servers bind 127.0.0.1; the kubelet would probe the node IP.
		tcp.WithHost("127.0.0.1")
	}
	return corev1ac.Probe().WithTCPSocket(tcp).WithPeriodSeconds(2).WithFailureThreshold(3)
}

// execProbe checks a server that listens on 127.0.0.1 only, from inside its
// container (the image has no shell: the pod binary does the request).
func execProbe(url string) *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().
		WithExec(corev1ac.ExecAction().WithCommand(PodBinaryPath, "probe", url)).
		WithPeriodSeconds(5).WithTimeoutSeconds(3).WithFailureThreshold(3)
}

func resourceQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// BackendService is a headless Service naming the backend pod, for the
// static manifests only: a kustomize base cannot know the pod IP the
// orchestrator writes into the bootstrap, so Envoy resolves this name
// (still pod to pod: a headless Service has no virtual IP).
func BackendService(o Options) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(Backend, o.Namespace).
		WithLabels(o.labels(Backend)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithSelector(Selector(Backend)).
			WithPorts(corev1ac.ServicePort().WithName("http").WithPort(o.Ports.Backend).WithTargetPort(intstr.FromInt32(o.Ports.Backend))))
}

// envoyEnv is Envoy's environment: where the accelerated build reads its
// databases from the image (the stock one has none to read), then the
// plan's own variables.
func envoyEnv(o Options) []*corev1ac.EnvVarApplyConfiguration {
	env := []*corev1ac.EnvVarApplyConfiguration{corev1ac.EnvVar().WithName("CORAZAWAF_HS_CACHE").WithValue(HyperscanCacheDir)}
	for _, e := range o.EnvoyEnv {
		name, value, _ := strings.Cut(e, "=")
		env = append(env, corev1ac.EnvVar().WithName(name).WithValue(value))
	}
	return env
}
