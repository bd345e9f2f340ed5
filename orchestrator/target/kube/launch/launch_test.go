package launch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/envoyproc"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/sweep"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/rollout"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/testenv"
)

// What `wafsweep sweep --target kube --kubeconfig K --image I` does, on a
// fake cluster: the kubeconfig is read, the namespace is the sweep's own,
// the sweep runs, and Close leaves nothing behind.
func TestKubeTargetFromTheCommandLineOptions(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no control plane")
	}
	root, err := envoyproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := testenv.BinDir(root)
	if err != nil {
		if os.Getenv("WAFSWEEP_KUBE_TESTS") == "required" {
			t.Fatal(err)
		}
		t.Skipf("no control plane binaries: %v", err)
	}
	dir, err := os.MkdirTemp("", "wafsweep-launch-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	fc, err := testenv.StartFakeCluster(t.Context(), bin, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Stop()

	tgt, err := New(Options{Target: dataset.TargetKube, Kubeconfig: fc.Kubeconfig, Image: "wafsweep.local/wafsweep-pod:test",
		ProxyCores: 2, LoadgenCores: 2, ProxyMemory: "768Mi"}, "kube-0123abcd")
	if err != nil {
		t.Fatal(err)
	}
	if d := tgt.Describe(); len(d.Notes) == 0 || d.Notes[0] != "kubernetes target not started" {
		t.Errorf("description before Start: %+v", d)
	}
	closed := false
	defer func() {
		if !closed {
			tgt.Close(context.Background())
		}
	}()
	if err := tgt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	const ns = "wafsweep-kube-0123abcd"
	d, err := fc.Client.AppsV1().Deployments(ns).Get(t.Context(), "fortio", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the sweep's namespace %s: %v", ns, err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "wafsweep.local/wafsweep-pod:test" {
		t.Errorf("image %s", img)
	}
	p := plan.Default()
	p.Flavors, p.Shapes, p.Ladder = []string{plan.FlavorEnvoy}, []string{plan.ShapeGet}, []int{100}
	p.Connections = 2
	p.Warmup, p.Measure, p.Cooldown = 100*time.Millisecond, time.Second, 0
	p.FloorRPS, p.Confirm = 0, false
	out := t.TempDir()
	if err := sweep.Run(t.Context(), sweep.Options{Plan: p, Target: tgt, SweepID: "kube-0123abcd", OutDir: out}); err != nil {
		t.Fatal(err)
	}
	meta, err := dataset.ReadMetadata(filepath.Join(out, sweep.MetadataFile))
	if err != nil || meta.Target != dataset.TargetKube || !strings.Contains(meta.CoreAssignment["proxy"], "(exclusive)") {
		t.Errorf("metadata %+v %v", meta, err)
	}
	envoy, err := fc.Client.AppsV1().Deployments(ns).Get(t.Context(), "envoy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mem := envoy.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().String(); mem != "768Mi" {
		t.Errorf("--proxy-memory not applied: %s", mem)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	closed = true
	if err := tgt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := fc.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace left behind: %v", err)
	}

	// The kustomize overlays build and roll out on the same pools, every
	// pod Guaranteed (kubectl, where installed, builds and applies them).
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Log("kubectl not installed: the manifests are not applied")
		return
	}
	for _, overlay := range []string{"kind", "gke"} {
		built, err := exec.Command(kubectl, "kustomize", filepath.Join(root, "manifests", "overlays", overlay)).Output()
		if err != nil {
			t.Fatalf("kustomize %s: %v", overlay, err)
		}
		apply := exec.Command(kubectl, "--kubeconfig", fc.Kubeconfig, "apply", "--server-side", "--field-manager", "wafsweep-manifests", "-f", "-")
		apply.Stdin = strings.NewReader(string(built))
		if out, err := apply.CombinedOutput(); err != nil {
			t.Fatalf("applying overlay %s: %v\n%s", overlay, err, out)
		}
		for _, name := range []string{"envoy", "backend", "fortio"} {
			if _, err := rollout.Deployment(ctx, fc.Client, "wafsweep", name, time.Minute); err != nil {
				t.Errorf("overlay %s: %v", overlay, err)
			}
		}
		pods, err := fc.Client.CoreV1().Pods("wafsweep").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.QOSClass != corev1.PodQOSGuaranteed {
				t.Errorf("overlay %s: pod %s is %s", overlay, p.Name, p.Status.QOSClass)
			}
		}
	}
}
