package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/sweep"
	"github.com/wafsweep/wafsweep/orchestrator/target"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/rollout"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/spec"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/testenv"
)

// The fake cluster shared by the tests of this file: a real control plane
// with kwok nodes modelling a proxy pool and a load generator pool, started
// on first use and stopped when the tests end.
var fake struct {
	once     sync.Once
	cp       *testenv.ControlPlane
	loadgen  *testenv.LoadgenStub
	cleanup  func()
	skip     string // why the fake-cluster tests cannot run
	setupErr error
}

// kubeTestsEnv set to "required" turns a missing control plane into a
// failure (make test sets it; a plain go test skips).
const kubeTestsEnv = "WAFSWEEP_KUBE_TESTS"

func TestMain(m *testing.M) {
	code := m.Run()
	if fake.cleanup != nil {
		fake.cleanup()
	}
	os.Exit(code)
}

// fakeCluster returns the shared fake cluster or skips/fails the test.
func fakeCluster(t *testing.T) *testenv.ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no control plane")
	}
	fake.once.Do(func() {
		var err error
		fake.cleanup, err = startFakeCluster()
		if err != nil {
			if os.Getenv(kubeTestsEnv) == "required" {
				fake.setupErr = err
			} else {
				fake.skip = err.Error()
			}
		}
	})
	if fake.setupErr != nil {
		t.Fatalf("fake cluster: %v", fake.setupErr)
	}
	if fake.skip != "" {
		t.Skipf("fake cluster unavailable: %s", fake.skip)
	}
	if err := fake.cp.Healthy(); err != nil {
		t.Fatal(err)
	}
	return fake.cp
}

func startFakeCluster() (func(), error) {
	root, err := envoyproc.RepoRoot()
	if err != nil {
		return nil, err
	}
	bin, err := testenv.BinDir(root)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "wafsweep-kwok-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	started := time.Now()
	fc, err := testenv.StartFakeCluster(ctx, bin, dir, true)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	fake.cp, fake.loadgen = fc.ControlPlane, fc.Loadgen
	fmt.Printf("kube tests: control plane and 4 kwok nodes ready in %v\n", time.Since(started).Round(time.Millisecond))
	return func() { fc.Stop(); os.RemoveAll(dir) }, nil
}

// newFakeTarget is a kube target on the fake cluster in its own namespace.
func newFakeTarget(t *testing.T, namespace string) *Kube {
	t.Helper()
	cp := fakeCluster(t)
	k, err := New(Options{
		Name: dataset.TargetKube, Config: cp.Config,
		Spec: spec.Options{
			Namespace: namespace, SweepID: "test", Image: "wafsweep.local/wafsweep-pod:test",
			Tolerations: testenv.FakeTolerations(),
		},
		RolloutTimeout: time.Minute, ReadyTimeout: 20 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := k.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return k
}

// Prepare applies the shared objects under one field manager, every pod is
// Guaranteed, and the roles land on their pools, the load generator never
// beside the proxy.
func TestPrepareAppliesGuaranteedPodsOnTheirPools(t *testing.T) {
	k := newFakeTarget(t, "wafsweep-prepare")
	ctx := t.Context()
	if err := k.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	c := fake.cp.Client
	for _, name := range []string{spec.Backend, spec.Fortio} {
		d, err := c.AppsV1().Deployments("wafsweep-prepare").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.ManagedFields) == 0 || d.ManagedFields[0].Manager != spec.FieldManager || d.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("%s: managed by %+v, want one server-side apply by %s", name, d.ManagedFields, spec.FieldManager)
		}
	}
	pods, err := c.CoreV1().Pods("wafsweep-prepare").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodeOf := map[string]string{}
	agents := 0
	for _, p := range pods.Items {
		if p.Status.QOSClass != corev1.PodQOSGuaranteed {
			t.Errorf("pod %s is %s, want Guaranteed", p.Name, p.Status.QOSClass)
		}
		node, err := c.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		component := p.Labels[spec.LabelComponent]
		want := spec.NodeLabelLoadgen
		if component == spec.Agent {
			agents++
			continue
		}
		if node.Labels[want] != "true" {
			t.Errorf("%s runs on %s, not a %s node", p.Name, node.Name, want)
		}
		nodeOf[component] = node.Name
	}
	if agents != 4 {
		t.Errorf("%d cgroup agents, want one on each of the 4 role nodes", agents)
	}
	d := k.Describe()
	for _, role := range []string{"proxy", "loadgen", "backend"} {
		if d.CoreAssignment[role] == "" {
			t.Errorf("no core assignment recorded for %s: %+v", role, d.CoreAssignment)
		}
	}
	if !strings.Contains(d.CoreAssignment["proxy"], "2-3 (exclusive)") || !strings.HasPrefix(d.CoreAssignment["proxy"], "proxy-") {
		t.Errorf("proxy assignment %q: want a proxy node's exclusive cpuset 2-3", d.CoreAssignment["proxy"])
	}
	notes := strings.Join(d.Notes, "\n")
	for _, want := range []string{"QoS Guaranteed", "instance type fake-4", "proxy: pod envoy-"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	// The vanilla Envoy Prepare verified the placement with is stopped.
	envoys, _ := c.CoreV1().Pods("wafsweep-prepare").List(ctx, metav1.ListOptions{LabelSelector: spec.LabelComponent + "=" + spec.Envoy})
	if len(envoys.Items) != 0 {
		t.Errorf("Prepare left %d Envoy pods running", len(envoys.Items))
	}
}

// A new bootstrap is a new pod template: Envoy rolls (Recreate), the old
// pod and ConfigMap go; the same bootstrap again is the same revision.
func TestConfigHashRollout(t *testing.T) {
	k := newFakeTarget(t, "wafsweep-rollout")
	ctx := t.Context()
	if err := k.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	c := fake.cp.Client
	ns := "wafsweep-rollout"
	tier := func(name string) string {
		root, _ := envoyproc.RepoRoot()
		return fmt.Sprintf(`{"directives":["Include %s"]}`, filepath.Join(root, "rulesets", name+".conf"))
	}
	deployments := []target.Deployment{
		{Config: plan.Config{Flavor: plan.FlavorEnvoy, Tier: plan.TierNone, Shape: plan.ShapeGet}, RunDir: t.TempDir()},
		{Config: plan.Config{Flavor: plan.FlavorWAF, Tier: plan.TierHeadersOnly, Shape: plan.ShapeGet}, WAFConfigJSON: tier(plan.TierHeadersOnly), RunDir: t.TempDir()},
		{Config: plan.Config{Flavor: plan.FlavorWAF, Tier: plan.TierTargeted, Shape: plan.ShapeGet}, WAFConfigJSON: tier(plan.TierTargeted), RunDir: t.TempDir()},
	}
	var hashes []string
	var previous *deployed
	for i, d := range deployments {
		// No teardown in between: the Deployment itself must roll.
		got, err := k.Deploy(ctx, d)
		if err != nil {
			t.Fatalf("deployment %d: %v", i, err)
		}
		dep := got.(*deployed)
		hash := dep.pod.Annotations[spec.AnnotationBootstrapHash]
		hashes = append(hashes, hash)
		if previous != nil {
			if dep.pod.UID == previous.pod.UID || hash == hashes[i-1] {
				t.Fatalf("deployment %d did not roll: pod %s hash %s", i, dep.pod.Name, hash)
			}
			if _, err := c.CoreV1().Pods(ns).Get(ctx, previous.pod.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("old pod %s still there after the rollout (Recreate): %v", previous.pod.Name, err)
			}
			previous.control.Close()
		}
		cms, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: spec.LabelComponent + "=" + spec.Envoy})
		if err != nil {
			t.Fatal(err)
		}
		if len(cms.Items) != 1 || cms.Items[0].Name != spec.BootstrapConfigMapName(hash) || cms.Items[0].Immutable == nil || !*cms.Items[0].Immutable {
			t.Errorf("bootstrap ConfigMaps after deployment %d: %d, want only the immutable %s", i, len(cms.Items), spec.BootstrapConfigMapName(hash))
		}
		if _, err := os.Stat(filepath.Join(d.RunDir, "placement.json")); err != nil {
			t.Errorf("placement not recorded: %v", err)
		}
		if got.Restarted() {
			t.Errorf("deployment %d reports a restart right after deploying", i)
		}
		previous = dep
	}
	// The WAF bootstrap carries the tier's rules inline: the pod has no
	// rulesets directory.
	envoyJSON, err := os.ReadFile(filepath.Join(deployments[2].RunDir, "envoy.json"))
	if err != nil || !strings.Contains(string(envoyJSON), "@detectXSS") || strings.Contains(string(envoyJSON), "Include /") {
		t.Errorf("the targeted tier is not inlined in the bootstrap (%v)", err)
	}
	d, err := c.AppsV1().Deployments(ns).Get(ctx, spec.Envoy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Strategy.Type != "Recreate" || d.Status.ObservedGeneration != d.Generation {
		t.Errorf("envoy deployment: strategy %s, generation %d observed %d", d.Spec.Strategy.Type, d.Generation, d.Status.ObservedGeneration)
	}
	if err := previous.Teardown(); err != nil {
		t.Fatal(err)
	}
	if pods, _ := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: spec.LabelComponent + "=" + spec.Envoy}); len(pods.Items) != 0 {
		t.Errorf("teardown left %d Envoy pods", len(pods.Items))
	}
}

// A rollout that cannot finish fails with the scheduler's reason instead
// of hanging.
func TestRolloutWaitNamesTheReason(t *testing.T) {
	cp := fakeCluster(t)
	k := newFakeTarget(t, "wafsweep-stuck")
	ctx := t.Context()
	o := k.opts.Spec
	if err := k.applier.Namespace(ctx, spec.Namespace(o)); err != nil {
		t.Fatal(err)
	}
	// Far more cores than any fake node has.
	o.Proxy.MilliCPU = 64000
	if _, err := k.applier.Deployment(ctx, spec.EnvoyDeployment(o, "0123456789abcdef", 1, "")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := rollout.Deployment(ctx, cp.Client, o.Namespace, spec.Envoy, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "unschedulable") || !strings.Contains(err.Error(), "Insufficient cpu") {
		t.Fatalf("want an error naming the unschedulable pod and insufficient CPU, got %v", err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the wait took %v for a 5 s timeout", took)
	}
}

// Close deletes the namespace and everything the sweep created in it.
func TestCloseDeletesEverything(t *testing.T) {
	cp := fakeCluster(t)
	k := newFakeTarget(t, "wafsweep-close")
	ctx := t.Context()
	if err := k.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Deploy(ctx, target.Deployment{Config: plan.Config{Flavor: plan.FlavorEnvoy, Tier: plan.TierNone, Shape: plan.ShapeGet}}); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.CoreV1().Namespaces().Get(ctx, "wafsweep-close", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace still there after Close: %v", err)
	}
	pods, err := cp.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: spec.LabelManagedBy + "=" + spec.FieldManager + "," + spec.LabelSweep + "=test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Namespace == "wafsweep-close" {
			t.Errorf("pod %s survived Close", p.Name)
		}
	}
}

// A whole sweep through the kube target: real control plane, real
// scheduling and rollouts, real port-forwards; the load step is stubbed
// behind the load generator pod's real protocol, and must be sent to pod
// IPs, never a port-forward.
func TestSweepEndToEndOnFakeCluster(t *testing.T) {
	p := plan.Default()
	p.Flavors = []string{plan.FlavorDirect, plan.FlavorEnvoy, plan.FlavorWAF}
	// A shared test machine, and the capacity search is the plumbing
	// checked here: no measurement's checks, no SLO searches.
	p.MaxLoadgenLateness, p.MaxCPUSteal, p.MaxLoadgenDelay = 1, 1, time.Second
	p.SLOs = nil
	p.Tiers = []string{plan.TierTargeted}
	p.Shapes = []string{plan.ShapeJSON1K}
	p.Ladder = []int{100, 200}
	p.Connections = 4
	p.Warmup, p.Measure, p.Cooldown = 200*time.Millisecond, 2*time.Second, 0
	p.FloorRPS, p.Confirm = 0, false
	out, runs := sweepOnFakeCluster(t, "wafsweep-sweep", p)
	steps, err := dataset.ReadSteps(filepath.Join(out, sweep.StepsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 6 {
		t.Fatalf("%d steps, want 2 rates x 3 configurations: %+v", len(steps), steps)
	}
	for _, s := range steps {
		if s.Verdict != dataset.VerdictPass {
			t.Errorf("%s at %d: %s %v", s.ConfigID, s.TargetRPS, s.Verdict, s.Reasons)
		}
		if s.Flavor != plan.FlavorDirect && !(s.ProxyCPUS > 0 && s.ProxyRSSPeakMB > 0 && s.CoresPer1k > 0) {
			t.Errorf("%s at %d: proxy resources not read from its cgroup: cpu %v peak %v cores/1k %v", s.ConfigID, s.TargetRPS, s.ProxyCPUS, s.ProxyRSSPeakMB, s.CoresPer1k)
		}
		if !(s.LoadgenCPUS > 0) {
			t.Errorf("%s at %d: load generator CPU not read from its container", s.ConfigID, s.TargetRPS)
		}
	}
	if len(runs) != 6 {
		t.Errorf("%d load runs, want one per step (warm-up, window and tail in one run)", len(runs))
	}
	for _, r := range runs {
		if !strings.HasPrefix(r.URL, "http://10.244.") || !strings.HasSuffix(r.URL, "/api/orders") {
			t.Errorf("the load generator was sent to %s: want a pod IP (the data plane never uses a port-forward)", r.URL)
		}
		if r.Connections != 4 || r.Method != "POST" || r.Warmup != p.Warmup || r.Duration != p.Measure || len(r.Body) == 0 {
			t.Errorf("step differs from the plan: %d connections, %s, warm-up %v, window %v, %d body bytes",
				r.Connections, r.Method, r.Warmup, r.Duration, len(r.Body))
		}
	}
	for _, s := range steps {
		// Envoy's own count (admin, through the port-forward) crosses
		// the load generator's; for the direct flavor the backend's own
		// (its stats listener, through its port-forward).
		if s.ProxyCompleted != s.Completed {
			t.Errorf("%s at %d: the server measured counted %d in the window, the load generator %d", s.ConfigID, s.TargetRPS, s.ProxyCompleted, s.Completed)
		}
		if s.WindowS != p.Measure.Seconds() || !(s.P99RawMs > 0) || !(s.LoadgenLatenessP99Ms > 0) {
			t.Errorf("%s at %d: not a window-exact step: window %v s, raw p99 %v, lateness p99 %v",
				s.ConfigID, s.TargetRPS, s.WindowS, s.P99RawMs, s.LoadgenLatenessP99Ms)
		}
	}
	meta, err := dataset.ReadMetadata(filepath.Join(out, sweep.MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	if meta.Target != dataset.TargetKube || meta.FinishedAt.IsZero() || !strings.Contains(meta.CoreAssignment["proxy"], "exclusive") {
		t.Errorf("metadata: target %s, finished %v, proxy %q", meta.Target, meta.FinishedAt, meta.CoreAssignment["proxy"])
	}
	// The processor named is the proxy node's, read by its agent, not
	// this machine's.
	if meta.CPUModel != testenv.FakeNodeCPUModel || meta.Cores != 4 {
		t.Errorf("metadata names CPU %q x %d, want the proxy node's %q x 4", meta.CPUModel, meta.Cores, testenv.FakeNodeCPUModel)
	}
	knees, err := dataset.ReadKnees(filepath.Join(out, sweep.KneesFile))
	if err != nil {
		t.Fatal(err)
	}
	censored := map[string]bool{}
	for _, k := range knees {
		if k.Round == 0 && k.Censored == dataset.CensoredAbove {
			censored[k.ConfigID] = true
		}
	}
	if len(censored) != 3 {
		t.Errorf("want all 3 configurations censored above the ladder, got %v", censored)
	}
}

// Ctrl-C in the middle of a sweep: the step in progress is dropped, Envoy
// is stopped with a context of its own, and Close deletes the namespace.
func TestInterruptedSweepTearsDown(t *testing.T) {
	cp := fakeCluster(t)
	k := newFakeTarget(t, "wafsweep-interrupt")
	if err := k.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	p := plan.Default()
	p.Flavors, p.Shapes, p.Ladder = []string{plan.FlavorEnvoy}, []string{plan.ShapeGet}, []int{100, 200, 400}
	// A shared test machine, and the capacity search is the plumbing
	// checked here: no measurement's checks, no SLO searches.
	p.MaxLoadgenLateness, p.MaxCPUSteal, p.MaxLoadgenDelay = 1, 1, time.Second
	p.SLOs = nil
	p.Connections = 2
	p.Warmup, p.Measure, p.Cooldown = 100*time.Millisecond, 2*time.Second, 0
	p.FloorRPS, p.Confirm = 0, false
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := t.TempDir()
	err := sweep.Run(ctx, sweep.Options{Plan: p, Target: k, SweepID: "interrupt", OutDir: out, Progress: cancelOnFirstStep{cancel}})
	if err == nil {
		t.Fatal("an interrupted sweep reported success")
	}
	pods, _ := cp.Client.CoreV1().Pods("wafsweep-interrupt").List(t.Context(), metav1.ListOptions{LabelSelector: spec.LabelComponent + "=" + spec.Envoy})
	if len(pods.Items) != 0 {
		t.Errorf("Envoy still runs after the interruption: %d pods", len(pods.Items))
	}
	steps, _ := dataset.ReadSteps(filepath.Join(out, sweep.StepsFile))
	if len(steps) == 0 || len(steps) >= 3 {
		t.Errorf("%d steps recorded, want the finished ones only", len(steps))
	}
	closeCtx, closeCancel := context.WithTimeout(context.Background(), time.Minute)
	defer closeCancel()
	if err := k.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.CoreV1().Namespaces().Get(closeCtx, "wafsweep-interrupt", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace left behind: %v", err)
	}
}

// cancelOnFirstStep cancels the sweep when the first step is reported.
type cancelOnFirstStep struct{ cancel context.CancelFunc }

func (c cancelOnFirstStep) Write(p []byte) (int, error) {
	if strings.Contains(string(p), " rps: ") {
		c.cancel()
	}
	return len(p), nil
}

// A mixed shape with a share of attacks runs on the Kubernetes targets as
// on the local one: each step's runs reach the load generator pod
// together, against pod IPs, the attacks Apart and marked; the step is
// judged on them (the stand-in answers marked runs 403, as a WAF would).
func TestMixWithAttacksOnFakeCluster(t *testing.T) {
	p := plan.Default()
	p.Flavors, p.Tiers, p.Shapes = []string{plan.FlavorWAF}, []string{plan.TierTargeted}, []string{"mix:get=3,json_1k=1"}
	p.AttackSharePct = 10
	p.MaxLoadgenLateness, p.MaxCPUSteal, p.MaxLoadgenDelay = 1, 1, time.Second
	p.SLOs, p.Ladder, p.Connections = nil, []int{200}, 8
	p.Warmup, p.Measure, p.Cooldown = 200*time.Millisecond, 2*time.Second, 0
	p.FloorRPS, p.Confirm = 0, false
	out, runs := sweepOnFakeCluster(t, "wafsweep-mix", p)
	sw, err := dataset.ReadSweep(out)
	if err != nil {
		t.Fatal(err)
	}
	attacks := 0
	for _, r := range runs {
		if !strings.HasPrefix(r.URL, "http://10.244.") {
			t.Errorf("a run was sent to %s: want a pod IP", r.URL)
		}
		if _, marked := r.Headers[backend.HeaderAttack]; marked != r.Apart {
			t.Errorf("run to %s: marked %v, apart %v", r.URL, marked, r.Apart)
		} else if marked {
			attacks++
		}
	}
	if len(sw.Steps) != 1 || attacks != 6 {
		t.Fatalf("%d steps, %d attack runs: want 1 step with the targeted tier's 6 attacks", len(sw.Steps), attacks)
	}
	s := sw.Steps[0]
	if s.Verdict != dataset.VerdictPass || s.AttackCalls == 0 || s.AttackMisses != 0 || s.BenignBlocked != 0 {
		t.Errorf("step: %s %v, %d attack calls, %d missed, %d benign blocked", s.Verdict, s.Reasons, s.AttackCalls, s.AttackMisses, s.BenignBlocked)
	}
	if len(sw.Members) != 2+6 || sw.Members[0].Member != plan.ShapeGet || sw.Members[2].Role != dataset.RoleAttack {
		t.Errorf("members %+v: want get, json_1k and 6 attacks", sw.Members)
	}
	// What reached the backend pod during the configuration, as its stats
	// listener counted it, is kept in the run directory.
	log, err := os.ReadFile(filepath.Join(out, "runs", "r0", plan.FlavorWAF, plan.TierTargeted, plan.PathName(p.Shapes[0]), "backend.log"))
	if err != nil || !regexp.MustCompile(`^backend: served [1-9][0-9]* requests, 0 of them marked `).Match(log) {
		t.Errorf("backend.log %q (%v): want the configuration's count, none marked", log, err)
	}
}

// sweepOnFakeCluster sweeps p on a fake cluster in namespace and returns
// the sweep's directory and the runs the load generator stand-in received.
func sweepOnFakeCluster(t *testing.T, namespace string, p plan.Plan) (string, []loadgen.Spec) {
	t.Helper()
	k := newFakeTarget(t, namespace)
	ctx := t.Context()
	if err := k.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	root, err := envoyproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	runsBefore := len(fake.loadgen.Specs())
	err = sweep.Run(ctx, sweep.Options{Plan: p, Target: k, SweepID: namespace, OutDir: out,
		RulesetsDir: filepath.Join(root, "rulesets"), CommandLine: []string{"wafsweep", "sweep", "--target", "kube"}})
	if err != nil {
		t.Fatal(err)
	}
	return out, fake.loadgen.Specs()[runsBefore:]
}
