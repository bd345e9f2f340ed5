package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/target"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/bootstrap"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/portforward"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/remoteload"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/rollout"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/spec"
)

// Deploy implements target.Target. The direct flavor needs nothing new:
// the load generator loads the backend pod. The others roll Envoy to the
// configuration's bootstrap.
func (k *Kube) Deploy(ctx context.Context, d target.Deployment) (target.Deployed, error) {
	k.mu.Lock()
	prepared := k.prepared
	k.mu.Unlock()
	if !prepared {
		return nil, errors.New("kubernetes target: Prepare was not called")
	}
	switch d.Config.Flavor {
	case plan.FlavorDirect:
		return k.deployDirect(ctx, d)
	case plan.FlavorEnvoy, plan.FlavorWAF, plan.FlavorWAFAccelerated:
		dep, err := k.deployEnvoy(ctx, d)
		if err != nil {
			return nil, err
		}
		return dep, nil
	default:
		return nil, fmt.Errorf("flavor %s is not available on the Kubernetes targets", d.Config.Flavor)
	}
}

// dataHost is how pods address each other: by pod IP, or 127.0.0.1 on a
// host-network test node (its pods share the node's loopback).
func (k *Kube) dataHost(pod *corev1.Pod) string {
	if k.opts.Spec.HostNetwork {
		return "127.0.0.1"
	}
	return pod.Status.PodIP
}

// deployDirect loads the backend itself: on its clear port, or on its TLS
// port (rolled to serve it first) in a TLS sweep.
func (k *Kube) deployDirect(ctx context.Context, d target.Deployment) (*deployed, error) {
	o := k.opts.Spec
	port := o.Ports.Backend
	if d.TLS != nil {
		fingerprint, err := k.ensureTLS(ctx, d.TLS)
		if err != nil {
			return nil, err
		}
		if err := k.ensureBackendTLS(ctx, fingerprint); err != nil {
			return nil, err
		}
		port = o.Ports.BackendTLS
	}
	t, err := portforward.Open(k.opts.Config, k.client, o.Namespace, k.backendPod.Name, port)
	if err != nil {
		return nil, err
	}
	dep := &deployed{
		kube: k, control: t, runDir: d.RunDir,
		url:     d.Scheme() + "://" + t.Addr(port),
		dataURL: fmt.Sprintf("%s://%s:%d", d.Scheme(), k.dataHost(k.backendPod), port),
	}
	dep.backendBefore, dep.backendBeforeErr = k.readBackendStats(ctx)
	return dep, nil
}

// deployEnvoy applies the bootstrap ConfigMap and the Envoy Deployment,
// waits for the rollout, verifies the pod's QoS and cpuset, then opens the
// control port-forward and waits for Envoy's /ready.
func (k *Kube) deployEnvoy(ctx context.Context, d target.Deployment) (*deployed, error) {
	o := k.opts.Spec
	wafJSON := ""
	if plan.HasWAF(d.Config.Flavor) {
		wafJSON = d.WAFConfigJSON
		if wafJSON == "" {
			return nil, fmt.Errorf("flavor %s without a WAF configuration", d.Config.Flavor)
		}
	}
	fingerprint, err := k.ensureTLS(ctx, d.TLS)
	if err != nil {
		return nil, err
	}
	bo := bootstrap.Options{
		ListenHost: bindHost(o), ListenPort: int(o.Ports.EnvoyListen), AdminPort: int(o.Ports.EnvoyAdmin),
		BackendHost: k.dataHost(k.backendPod), BackendPort: int(o.Ports.Backend),
		WAFConfigJSON: wafJSON, ModulePath: modulePath(d.Config.Flavor), AuditLogDir: spec.WAFLogDir,
	}
	if fingerprint != "" {
		bo.TLS = &envoyconfig.TLSFiles{CertChain: spec.TLSCertFile, PrivateKey: spec.TLSKeyFile}
	}
	built, err := bootstrap.Build(bo)
	if err != nil {
		return nil, err
	}
	if d.RunDir != "" {
		if err := os.WriteFile(filepath.Join(d.RunDir, "envoy.json"), built.JSON, 0o644); err != nil {
			return nil, err
		}
	}
	k.progress("rolling Envoy to bootstrap %s (%s)", built.Hash[:12], d.Config.ID())
	if err := k.applier.ConfigMap(ctx, spec.BootstrapConfigMap(o, built.Hash, built.JSON)); err != nil {
		return nil, err
	}
	if _, err := k.applier.Deployment(ctx, spec.EnvoyDeployment(o, built.Hash, 1, fingerprint)); err != nil {
		return nil, err
	}
	if _, err := rollout.Deployment(ctx, k.client, o.Namespace, spec.Envoy, k.opts.RolloutTimeout); err != nil {
		return nil, err
	}
	pod, err := rollout.RunningPod(ctx, k.client, o.Namespace, spec.Selector(spec.Envoy), spec.AnnotationBootstrapHash, built.Hash, k.opts.RolloutTimeout)
	if err != nil {
		return nil, err
	}
	dep := &deployed{kube: k, pod: pod, restarts: restartCount(pod, spec.Envoy), runDir: d.RunDir, tlsFingerprint: fingerprint}
	if d.AuditLog != "" {
		// Where bootstrap.PodWAFConfig moved it.
		dep.auditLog = path.Join(spec.WAFLogDir, filepath.Base(d.AuditLog))
	}
	// From here on a failure must stop Envoy again.
	fail := func(err error) (*deployed, error) {
		return nil, errors.Join(err, dep.Teardown())
	}
	// Older bootstraps are no longer mounted by any pod.
	if err := k.applier.DeleteConfigMaps(ctx, o.Namespace, labels.SelectorFromSet(map[string]string{spec.LabelComponent: spec.Envoy}).String(), spec.BootstrapConfigMapName(built.Hash)); err != nil {
		return fail(err)
	}
	p, err := k.place(ctx, pod, spec.Envoy, o.Proxy.Cores())
	if err != nil {
		return fail(err)
	}
	if !p.Exclusive && !k.opts.AllowSharedCPUs {
		return fail(fmt.Errorf("Envoy's cpuset is not exclusive (%s): enable the static CPU manager on the proxy nodes (see the README), or allow shared CPUs", p.Why))
	}
	if err := k.checkOwnCPUs(ctx, p); err != nil {
		return fail(err)
	}
	dep.placement = p
	if err := writePlacement(d.RunDir, p); err != nil {
		return fail(err)
	}
	dep.control, err = portforward.Open(k.opts.Config, k.client, o.Namespace, pod.Name, o.Ports.EnvoyListen, o.Ports.EnvoyAdmin)
	if err != nil {
		return fail(err)
	}
	if err := dep.waitReady(ctx, k.opts.ReadyTimeout); err != nil {
		return fail(err)
	}
	dep.url = d.Scheme() + "://" + dep.control.Addr(o.Ports.EnvoyListen)
	dep.admin = envoyproc.NewAdmin(dep.control.URL(o.Ports.EnvoyAdmin))
	dep.dataURL = fmt.Sprintf("%s://%s:%d", d.Scheme(), k.dataHost(pod), o.Ports.EnvoyListen)
	dep.backendBefore, dep.backendBeforeErr = k.readBackendStats(ctx)
	return dep, nil
}

// modulePath is the image's corazawaf build a flavor loads.
func modulePath(flavor string) string {
	if flavor == plan.FlavorWAFAccelerated {
		return spec.AcceleratedModulePath
	}
	return spec.ModulePath
}

func bindHost(o spec.Options) string {
	if o.HostNetwork {
		return "127.0.0.1"
	}
	return "0.0.0.0"
}

func restartCount(pod *corev1.Pod, container string) int32 {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.RestartCount
		}
	}
	return 0
}

// deployed is one running configuration on the cluster.
type deployed struct {
	kube      *Kube
	pod       *corev1.Pod // Envoy; nil for the direct flavor
	restarts  int32
	placement placement
	control   *portforward.Tunnel
	admin     *envoyproc.Admin // Envoy's admin through control; nil for direct
	url       string           // control: the pre-check's base URL, through the port-forward
	dataURL   string           // data plane: what the load generator loads, pod to pod
	runDir    string           // where Envoy's log is kept at teardown ("" for none)
	// tlsFingerprint is the certificate Envoy's pod mounts ("" in clear).
	tlsFingerprint string
	// auditLog is the audit log's path in Envoy's container ("" for none).
	auditLog string
	// backendBefore is the backend's count when the deployment was ready
	// (or why it could not be read): the backend pod serves every
	// configuration, and backend.log holds what reached it during this one.
	backendBefore    backend.Stats
	backendBeforeErr error

	mu       sync.Mutex
	peakSeen uint64
	torn     bool
}

func (d *deployed) URL() string { return d.url }

func (d *deployed) LoadgenCores() int { return max(d.kube.opts.Spec.Loadgen.Cores(), 1) }

// ProxyCores is Envoy's CPU limit (requests equal limits, whole cores).
func (d *deployed) ProxyCores() float64 {
	if d.pod == nil {
		return 0
	}
	return float64(d.kube.opts.Spec.Proxy.Cores())
}

// ProxyCompleted reads Envoy's downstream_rq_completed through the admin
// port-forward; for the direct flavor, the backend's own count through its
// stats port-forward (it is the server measured).
func (d *deployed) ProxyCompleted() (int64, error) {
	if d.admin != nil {
		return d.admin.DownstreamCompleted(envoyconfig.HTTPStatPrefix)
	}
	if d.pod != nil {
		return -1, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := d.kube.readBackendStats(ctx)
	return st.Requests, err
}

// waitReady polls Envoy's admin /ready through the port-forward.
func (d *deployed) waitReady(ctx context.Context, timeout time.Duration) error {
	admin := d.control.URL(d.kube.opts.Spec.Ports.EnvoyAdmin) + "/ready"
	client := &http.Client{Timeout: 2 * time.Second}
	last := "no answer"
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, admin, nil)
		resp, err := client.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		resp.Body.Close()
		last = fmt.Sprintf("%s %s", resp.Status, strings.TrimSpace(string(body)))
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("Envoy in %s not ready after %v (%s): %w", d.pod.Name, timeout, last, err)
	}
	return nil
}

// RunLoad runs the step on the in-cluster load generator (loadgen.RunAll
// in the pod) against the data-plane address, as package loadgen runs it
// on the local target: warm-up, window and tail in one run, counted call
// by call inside the window. The first spec's OnEdge runs here as each
// edge arrives from the pod, so the proxy is sampled at the window's edges
// (late by the port-forward's latency). The step is charged the load
// generator's own CPU over the window, which the pod reads at the window's
// edges (the container holds nothing else): its cgroup read before and
// after the run counted the warm-up and tail too.
func (d *deployed) RunLoad(ctx context.Context, specs []loadgen.Spec) (loadgen.Result, []loadgen.Result, error) {
	specs = slices.Clone(specs)
	for i, spec := range specs {
		var err error
		if specs[i], err = dataPlaneSpec(spec, d.url, d.dataURL); err != nil {
			return loadgen.Result{}, nil, err
		}
	}
	client, err := d.kube.loadgenClient()
	if err != nil {
		return loadgen.Result{}, nil, err
	}
	return client.RunAll(ctx, specs)
}

// Usage reads Envoy's and the backend's containers through their nodes'
// cgroup agents.
func (d *deployed) Usage() (target.Usage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k := d.kube
	// Not read here: the node's steal.
	u := target.Usage{BackendCPUSeconds: -1, ProxyThrottledSeconds: -1, StealSeconds: -1, ProxyWrittenBytes: -1, AuditLogBytes: -1}
	if b, err := k.readContainer(ctx, k.backendPod, "backend"); err == nil {
		u.BackendCPUSeconds = b.CPUSeconds
	}
	if d.pod == nil {
		return u, nil
	}
	r, err := k.readContainerFile(ctx, d.pod, "envoy", d.auditLog)
	if err != nil {
		return u, err
	}
	u.ProxyWrittenBytes = r.WrittenBytes
	if d.auditLog != "" {
		u.AuditLogBytes = r.FileBytes
	}
	d.mu.Lock()
	d.peakSeen = max(d.peakSeen, r.MemoryBytes)
	peak := max(d.peakSeen, r.MemoryPeakBytes)
	d.mu.Unlock()
	u.ProxyCPUSeconds, u.ProxyRSSBytes, u.ProxyPeakRSSBytes = r.CPUSeconds, r.MemoryBytes, peak
	u.ProxyThrottledSeconds = r.ThrottledSeconds
	return u, nil
}

// Restarted reports whether Envoy's pod is gone, replaced, or its container
// restarted since Deploy. A pod that is merely not ready (a probe timing out
// at saturation) has not restarted: that is a result, not a broken step.
func (d *deployed) Restarted() bool {
	if d.pod == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := d.kube.client.CoreV1().Pods(d.pod.Namespace).Get(ctx, d.pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		// Unknown is not a restart: the next check will tell.
		return false
	}
	return p.UID != d.pod.UID || p.DeletionTimestamp != nil || restartCount(p, spec.Envoy) != d.restarts
}

// Teardown stops Envoy: scaled to zero, waiting until its pod is gone so
// the next configuration gets the cores. The bootstrap ConfigMap stays
// until a newer one replaces it.
func (d *deployed) Teardown() error {
	d.mu.Lock()
	if d.torn {
		d.mu.Unlock()
		return nil
	}
	d.torn = true
	d.mu.Unlock()
	if d.admin != nil {
		d.admin.Close()
	}
	if d.control != nil {
		d.control.Close()
	}
	// Teardown also runs after Ctrl-C: it must not inherit a cancelled
	// context.
	k := d.kube
	ctx, cancel := context.WithTimeout(context.Background(), k.opts.RolloutTimeout)
	defer cancel()
	d.keepBackendLog(ctx)
	if d.pod == nil {
		return nil
	}
	d.keepLog(ctx)
	hash := d.pod.Annotations[spec.AnnotationBootstrapHash]
	if _, err := k.applier.Deployment(ctx, spec.EnvoyDeployment(k.opts.Spec, hash, 0, d.tlsFingerprint)); err != nil {
		return err
	}
	return k.applier.WaitPodsGone(ctx, k.opts.Spec.Namespace, labels.SelectorFromSet(spec.Selector(spec.Envoy)).String(), k.opts.RolloutTimeout)
}

// keepLog writes Envoy's container log (the module's lines among it) to
// the run directory as envoy.log, as the local target does, before the pod
// goes. A log the API server cannot give is named so in the file: the
// teardown itself must go on.
func (d *deployed) keepLog(ctx context.Context) {
	if d.runDir == "" {
		return
	}
	// A node the API server cannot reach for logs must not hold up the
	// teardown for the rollout timeout.
	ctx, cancel := context.WithTimeout(ctx, logTimeout)
	defer cancel()
	log, err := d.kube.client.CoreV1().Pods(d.pod.Namespace).GetLogs(d.pod.Name, &corev1.PodLogOptions{Container: spec.Envoy}).DoRaw(ctx)
	if err != nil {
		log = fmt.Appendf(nil, "wafsweep: Envoy's log of pod %s not read: %v\n", d.pod.Name, err)
	}
	if err := os.WriteFile(filepath.Join(d.runDir, "envoy.log"), log, 0o644); err != nil {
		d.kube.progress("keeping Envoy's log: %v", err)
	}
}

const logTimeout = 15 * time.Second

// keepBackendLog writes what reached the backend during the deployment
// to backend.log in the run directory, as the local target's backend
// writes its own when stopped: a marked attack counted there got past the
// proxy.
func (d *deployed) keepBackendLog(ctx context.Context) {
	if d.runDir == "" {
		return
	}
	var text string
	after, err := d.kube.readBackendStats(ctx)
	switch {
	case d.backendBeforeErr != nil:
		text = fmt.Sprintf("wafsweep: the backend's count at the start was not read: %v\n", d.backendBeforeErr)
	case err != nil:
		text = fmt.Sprintf("wafsweep: the backend's count at the end was not read: %v\n", err)
	default:
		text = after.Since(d.backendBefore).Summary()
	}
	if err := os.WriteFile(filepath.Join(d.runDir, "backend.log"), []byte(text), 0o644); err != nil {
		d.kube.progress("keeping the backend's count: %v", err)
	}
}

// loadgenClient is the load generator's client through its port-forward,
// reopened if it broke (an API server restart must not end the sweep).
func (k *Kube) loadgenClient() (remoteload.Client, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fortio == nil || k.fortio.Err() != nil {
		if k.fortio != nil {
			go k.fortio.Close()
		}
		t, err := portforward.Open(k.opts.Config, k.client, k.opts.Spec.Namespace, k.fortioPod.Name, k.opts.Spec.Ports.Fortio)
		if err != nil {
			k.fortio = nil
			return remoteload.Client{}, fmt.Errorf("reopening the port-forward to the load generator: %w", err)
		}
		k.fortio = t
	}
	return remoteload.Client{BaseURL: k.fortio.URL(k.opts.Spec.Ports.Fortio)}, nil
}
