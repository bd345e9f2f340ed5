package kube

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wafsweep/wafsweep/filter/accel/linkage"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/sweep"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/image"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/spec"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/testenv"
)

// realNodeSources are the image's files: the real Envoy and module, and
// the pod binary make test built (or one built here).
func realNodeSources(t *testing.T, root string) image.Sources {
	t.Helper()
	envoy, err := envoyproc.FindBinary()
	if err != nil {
		t.Skipf("real node: no Envoy (make test installs it): %v", err)
	}
	module := os.Getenv("CORAZAWAF_MODULE")
	if module == "" {
		module = filepath.Join(root, "build", "libcorazawaf.so")
	}
	if _, err := os.Stat(module); err != nil {
		t.Skipf("real node: no module (make build makes it): %v", err)
	}
	pod := os.Getenv("WAFSWEEP_POD_BINARY")
	if pod == "" {
		pod = filepath.Join(t.TempDir(), "wafsweep-pod")
		build := exec.Command("go", "build", "-o", pod, "./orchestrator/target/kube/cmd/wafsweep-pod")
		build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building wafsweep-pod: %v\n%s", err, out)
		}
	}
	src := image.Sources{Envoy: envoy, Module: module, PodBinary: pod}
	// The accelerated build and its databases, as make test leaves them.
	accelerated := os.Getenv("CORAZAWAF_ACCEL_MODULE")
	if accelerated == "" {
		accelerated = filepath.Join(root, "build", "libcorazawaf-accelerated.so")
	}
	switch _, err := os.Stat(accelerated); {
	case err == nil:
		src.AcceleratedModule, src.HyperscanCache = accelerated, os.Getenv("CORAZAWAF_HS_CACHE")
	case os.Getenv(kubeTestsEnv) == "required":
		t.Fatalf("real node: no accelerated module (make build makes it): %v", err)
	default:
		t.Logf("real node: waf-accelerated not run: %v", err)
	}
	return src
}

// linksHyperscan reports whether a module build uses the Hyperscan engine
// (else it is the pure-Go one).
func linksHyperscan(t *testing.T, module string) bool {
	t.Helper()
	l, err := linkage.Of(module)
	if err != nil {
		t.Fatal(err)
	}
	return l.Engine == linkage.Hyperscan
}

// One real node (kubelet, containerd, runc, static CPU manager) running
// real Envoy with the module, the backend and the real load generator in
// pods from the locally built image: a short sweep step of each corazawaf
// build (stock, and accelerated with the Hyperscan databases the image
// carries) at full CRS through the kube target, data plane on 127.0.0.1
// (host-network pods), Envoy pinned to the node's one exclusive CPU.
func TestRealNodeSweepStep(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	root, err := envoyproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := testenv.BinDir(root)
	if err != nil {
		if os.Getenv(kubeTestsEnv) == "required" {
			t.Fatal(err)
		}
		t.Skipf("real node: %v", err)
	}
	if err := testenv.NodeRequirements(bin); err != nil {
		t.Skipf("real node skipped: %v", err)
	}
	src := realNodeSources(t, root)
	started := time.Now()
	work := t.TempDir()
	built, err := image.Build(src, work)
	if err != nil {
		t.Fatal(err)
	}
	ref := "wafsweep.local/wafsweep-pod:" + built.Tag
	pause := "wafsweep.local/pause:" + built.Tag
	archive := filepath.Join(work, "images.tar")
	if err := image.WriteTarball(archive, map[string]v1.Image{ref: built.Image, pause: built.Pause}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	// Its own control plane: kwok's fake nodes must not meet a real one.
	dir, err := os.MkdirTemp("", "wafsweep-realnode-")
	if err != nil {
		t.Fatal(err)
	}
	cp, err := testenv.StartControlPlane(ctx, bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	var node *testenv.Node
	defer func() {
		if node != nil {
			if err := node.Stop(); err != nil {
				t.Errorf("stopping the node: %v", err)
			}
		}
		cp.Stop()
		if t.Failed() {
			t.Logf("node files kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	}()
	node, err = cp.StartNode(ctx, testenv.NodeOptions{
		Name:    "realnode",
		Labels:  map[string]string{spec.NodeLabelProxy: "true", spec.NodeLabelLoadgen: "true"},
		Archive: archive, PauseImage: pause,
	})
	if err != nil {
		t.Fatalf("starting the node: %v", err)
	}
	t.Logf("control plane and real node ready in %v", time.Since(started).Round(time.Millisecond))

	ports, err := freeLoopbackPorts(7)
	if err != nil {
		t.Fatal(err)
	}
	mem := resource.MustParse
	k, err := New(Options{
		Name: dataset.TargetKube, Config: cp.Config,
		Spec: spec.Options{
			Namespace: "wafsweep-realnode", SweepID: "realnode", Image: ref, PullPolicy: corev1.PullNever,
			HostNetwork: true, SingleNode: true,
			// One node, two cores: Envoy gets the one CPU the static policy
			// can hand out; the rest shares CPU 0.
			Proxy:   spec.Size{MilliCPU: 1000, Memory: mem("512Mi")},
			Loadgen: spec.Size{MilliCPU: 600, Memory: mem("256Mi")},
			Backend: spec.Size{MilliCPU: 200, Memory: mem("128Mi")},
			Agent:   spec.Size{MilliCPU: 100, Memory: mem("64Mi")},
			Ports:   spec.Ports{EnvoyListen: ports[0], EnvoyAdmin: ports[1], Backend: ports[2], Fortio: ports[3], Agent: ports[4], BackendTLS: ports[5], BackendStats: ports[6]},
		},
		RolloutTimeout: 3 * time.Minute, ReadyTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := k.Close(closeCtx); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	if err := k.Prepare(ctx); err != nil {
		t.Fatalf("prepare: %v\nkubelet log:\n%s", err, node.Log())
	}
	p := plan.Default()
	p.Flavors = []string{plan.FlavorWAF}
	if src.AcceleratedModule != "" {
		p.Flavors = append(p.Flavors, plan.FlavorWAFAccelerated)
	}
	p.Tiers = []string{plan.TierFullCRS}
	// A shared test machine, and the capacity search is the plumbing
	// checked here: no measurement's checks, no SLO searches.
	p.MaxLoadgenLateness, p.MaxCPUSteal, p.MaxLoadgenDelay = 1, 1, time.Second
	p.SLOs = nil
	p.Shapes = []string{plan.ShapeGet}
	p.Ladder = []int{100}
	p.Connections = 2
	p.Warmup, p.Measure, p.Cooldown = 500*time.Millisecond, 3*time.Second, 0
	p.FloorRPS, p.Confirm = 0, false
	out := t.TempDir()
	sweepStart := time.Now()
	err = sweep.Run(ctx, sweep.Options{Plan: p, Target: k, SweepID: "realnode", OutDir: out,
		RulesetsDir: filepath.Join(root, "rulesets"), CommandLine: []string{"wafsweep", "sweep", "--target", "kube"}})
	if err != nil {
		t.Fatalf("sweep: %v\nkubelet log:\n%s", err, node.Log())
	}
	steps, err := dataset.ReadSteps(filepath.Join(out, sweep.StepsFile))
	if err != nil || len(steps) != len(p.Flavors) {
		t.Fatalf("steps: %+v %v", steps, err)
	}
	for _, s := range steps {
		checkRealNodeStep(t, s)
	}
	t.Logf("sweep of %d steps in %v", len(steps), time.Since(sweepStart).Round(time.Millisecond))
	if src.AcceleratedModule != "" {
		checkAcceleratedLog(t, filepath.Join(out, "runs", "r0", plan.FlavorWAFAccelerated, plan.TierFullCRS, plan.ShapeGet, "envoy.log"),
			linksHyperscan(t, src.AcceleratedModule) && src.HyperscanCache != "")
	}
	meta, err := dataset.ReadMetadata(filepath.Join(out, sweep.MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	if meta.CoreAssignment["proxy"] != "realnode:1 (exclusive)" {
		t.Errorf("proxy core assignment %q, want the node's one exclusive CPU 1", meta.CoreAssignment["proxy"])
	}
	notes := strings.Join(meta.Notes, "\n")
	if !strings.Contains(notes, "proxy: pod envoy-") || !strings.Contains(notes, "QoS Guaranteed, cpuset 1 (exclusive)") || !strings.Contains(notes, "kubelet v1.37.2") {
		t.Errorf("metadata notes lack the verification:\n%s", notes)
	}
	checkRealNodeTransport(ctx, t, k, p, filepath.Join(root, "rulesets"))
	pods, err := cp.Client.CoreV1().Pods("wafsweep-realnode").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
			t.Errorf("pod %s is %s", pod.Name, pod.Status.QOSClass)
		}
	}
}

// checkRealNodeTransport sweeps the prepared target again over HTTP/2 and
// TLS, with the audit log and a share of attacks: Envoy terminates TLS with
// the run's certificate from the Secret, the backend is rolled to be the
// direct flavor's TLS edge, and the load generator pod verifies both for
// the Host name while connecting to their address. Every row says h2 over
// TLS; the node's agent reads the audit log's growth and Envoy's writes in
// its pod; and the backend pod's own count shows the attacks reached it
// without a WAF and none did through one.
func checkRealNodeTransport(ctx context.Context, t *testing.T, k *Kube, p plan.Plan, rulesets string) {
	t.Helper()
	p.Flavors, p.Protocol, p.TLS, p.AuditLog = []string{plan.FlavorDirect, plan.FlavorWAF}, plan.ProtocolH2, true, true
	p.AttackSharePct = 10
	out := t.TempDir()
	err := sweep.Run(ctx, sweep.Options{Plan: p, Target: k, SweepID: "realnode-tls", OutDir: out,
		RulesetsDir: rulesets, CommandLine: []string{"wafsweep", "sweep", "--target", "kube", "--protocol", "h2", "--tls"}})
	if err != nil {
		t.Fatalf("h2+tls sweep: %v", err)
	}
	steps, err := dataset.ReadSteps(filepath.Join(out, sweep.StepsFile))
	if err != nil || len(steps) != 2 {
		t.Fatalf("h2+tls steps: %+v %v", steps, err)
	}
	for _, s := range steps {
		t.Logf("h2+tls step: %s at %d rps: %s, completed %d/%d, p99 %.2f ms, audit %.0f bytes/request, disk writes %.0f bytes/s",
			s.ConfigID, s.TargetRPS, s.Verdict, s.Completed, s.Scheduled, s.P99Ms, s.AuditBytesPerReq, s.ProxyDiskWriteBytesPerS)
		if s.Transport != (plan.Transport{Protocol: plan.ProtocolH2, TLS: true}) {
			t.Errorf("%s: transport %+v, want h2 over TLS", s.ConfigID, s.Transport)
		}
		if s.Verdict == dataset.VerdictInvalid || s.Completed == 0 || s.Non2xx != 0 || s.SocketErrors != 0 {
			t.Errorf("%s over h2+tls: %+v", s.ConfigID, s)
		}
		// A JSON record of a full-CRS GET is about a kilobyte; the page
		// cache is dirtied as it is written.
		if s.Flavor == plan.FlavorWAF && (s.AuditBytesPerReq < 500 || s.AuditBytesPerReq > 10000 || !(s.ProxyDiskWriteBytesPerS > 0)) {
			t.Errorf("%s: audit %v bytes per request, Envoy wrote %v bytes/s: want both read in the pod", s.ConfigID, s.AuditBytesPerReq, s.ProxyDiskWriteBytesPerS)
		}
	}
	for _, c := range []struct{ flavor, tier, marked string }{
		{plan.FlavorDirect, plan.TierNone, `[1-9][0-9]*`},
		{plan.FlavorWAF, plan.TierFullCRS, `0`},
	} {
		log, err := os.ReadFile(filepath.Join(out, "runs", "r0", c.flavor, c.tier, plan.ShapeGet, "backend.log"))
		if err != nil || !regexp.MustCompile(`^backend: served [1-9][0-9]* requests, `+c.marked+` of them marked `).Match(log) {
			t.Errorf("%s: backend.log %q (%v): want %s marked attacks", c.flavor, log, err, c.marked)
		}
	}
	secret, err := k.client.CoreV1().Secrets(k.opts.Spec.Namespace).Get(ctx, spec.TLSSecretName, metav1.GetOptions{})
	if err != nil || secret.Type != corev1.SecretTypeTLS {
		t.Fatalf("the TLS secret: %v", err)
	}
	if fp := k.backendPod.Annotations[spec.AnnotationTLSFingerprint]; fp == "" || fp != secret.Annotations[spec.AnnotationTLSFingerprint] {
		t.Errorf("the backend pod serves certificate %q, the secret holds %q", fp, secret.Annotations[spec.AnnotationTLSFingerprint])
	}
}

// checkRealNodeStep holds one step to what the pods must have measured.
func checkRealNodeStep(t *testing.T, s dataset.StepRow) {
	t.Helper()
	t.Logf("real node step: %s at %d rps: %s, completed %d/%d (Envoy counted %d), p99 %.2f ms, proxy CPU %.3f s, loadgen CPU %.3f s, RSS peak %.1f MB",
		s.ConfigID, s.TargetRPS, s.Verdict, s.Completed, s.Scheduled, s.ProxyCompleted, s.P99Ms, s.ProxyCPUS, s.LoadgenCPUS, s.ProxyRSSPeakMB)
	// Pass or fail is the machine's business (its one shared core also
	// serves whatever else runs here, builds included); the step must have
	// been measured, every answer a 200 through the WAF.
	if s.Verdict == dataset.VerdictInvalid || s.Completed == 0 || s.Completed > s.Scheduled || s.Non2xx != 0 || s.SocketErrors != 0 ||
		!(s.ProxyCPUS > 0) || !(s.ProxyRSSPeakMB > 0) || !(s.LoadgenCPUS > 0) || s.RawFile == "" {
		t.Errorf("%s: the step through real Envoy, module and the load generator: %+v", s.ConfigID, s)
	}
	// Counted inside the window by the pod's load generator, not over
	// its whole run.
	if s.WindowS < 2.9 || s.WindowS > 3.2 || !(s.P99RawMs > 0) || !(s.LoadgenLatenessP99Ms >= 0) {
		t.Errorf("%s: not a window-exact step: window %v s, raw p99 %v ms, lateness p99 %v ms", s.ConfigID, s.WindowS, s.P99RawMs, s.LoadgenLatenessP99Ms)
	}
	// Envoy's own count over the window, read through the admin
	// port-forward at each edge, within the sweep's slack of the load
	// generator's.
	if d := s.ProxyCompleted - s.Completed; s.ProxyCompleted < 0 || d < -5 || d > 5 {
		t.Errorf("%s: Envoy counted %d requests in the window, the load generator %d", s.ConfigID, s.ProxyCompleted, s.Completed)
	}
}

// checkAcceleratedLog reads the pod's Envoy log the target kept: the
// accelerated build loaded in the pod (its libraries were in the image)
// and, with Hyperscan, read its database from the image's cache rather
// than compiling it on Envoy's main thread.
func checkAcceleratedLog(t *testing.T, path string, fromCache bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the accelerated Envoy's log: %v", err)
	}
	log := string(b)
	summary := ""
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "acceleration prefilter:") {
			summary = line
		}
	}
	switch {
	case summary == "":
		t.Errorf("%s has no acceleration summary: the accelerated build did not load its rules\n%s", path, log)
	case fromCache && !strings.Contains(summary, "database loaded from cache"):
		t.Errorf("the accelerated build did not read its Hyperscan database from the image: %s", summary)
	default:
		t.Logf("accelerated build in the pod: %s", summary)
	}
}

func freeLoopbackPorts(n int) ([]int32, error) {
	var out []int32
	for range n {
		p, err := envoyproc.FreePort()
		if err != nil {
			return nil, err
		}
		for _, q := range out {
			if q == int32(p) {
				return freeLoopbackPorts(n)
			}
		}
		out = append(out, int32(p))
	}
	return out, nil
}
