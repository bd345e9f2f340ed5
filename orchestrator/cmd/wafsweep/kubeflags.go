package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/sweep"

	"github.com/wafsweep/wafsweep/orchestrator/target/kube"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/image"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/launch"
	"github.com/wafsweep/wafsweep/orchestrator/target/local"
)

// kubeFlags are the flags of --target kind and --target kube.
type kubeFlags struct {
	kubeconfig, context, namespace string
	registry, image                string
	kindCluster, kindNodeImage     string
	proxyCores, loadgenCores       int
	proxyMemory, envoy, podBinary  string
	allowSharedCPUs                bool
}

func (k *kubeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "kube: kubeconfig of the cluster (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&k.context, "context", "", "kube: kubeconfig context (default: the current one)")
	fs.StringVar(&k.namespace, "namespace", "", "kind/kube: the sweep's own namespace, deleted at the end (default wafsweep-<sweep id>)")
	fs.StringVar(&k.registry, "registry", "", "kube: registry to push the image to, e.g. REGION-docker.pkg.dev/PROJECT/REPO")
	fs.StringVar(&k.image, "image", "", "kind/kube: use this already pushed or loaded image instead of building one")
	fs.StringVar(&k.kindCluster, "kind-cluster", "wafsweep", "kind: cluster to create or reuse")
	fs.StringVar(&k.kindNodeImage, "kind-node-image", "", "kind: node image for a new cluster (default: kind's)")
	fs.IntVar(&k.proxyCores, "proxy-cores", 2, "kind/kube: Envoy's exclusive cores, also its --concurrency")
	fs.IntVar(&k.loadgenCores, "loadgen-cores", 2, "kind/kube: the load generator's cores")
	fs.StringVar(&k.proxyMemory, "proxy-memory", "1Gi", "kind/kube: Envoy's memory (request = limit)")
	fs.StringVar(&k.envoy, "envoy", "", "kind/kube: the Envoy binary put in the image (default <repo>/build/envoy)")
	fs.StringVar(&k.podBinary, "pod-binary", "", "kind/kube: the static wafsweep-pod binary put in the image (default <repo>/build/wafsweep-pod)")
	fs.BoolVar(&k.allowSharedCPUs, "allow-shared-cpus", false, "measure even when Envoy's CPUs are not its own: local: --proxy-cpus may overlap --loadgen-cpus; kind/kube: a cpuset that is not exclusive (noted in the metadata)")
}

// target validates the flags into a Kubernetes target, started by
// runSweep once signals are handled. The image carries the corazawaf
// builds the plan loads.
func (k kubeFlags) target(name, sweepID, repoRoot string, modules moduleBuilds, p plan.Plan, progress io.Writer) (*launch.Target, error) {
	def := func(v, rel string) string {
		if v != "" || repoRoot == "" {
			return v
		}
		return filepath.Join(repoRoot, rel)
	}
	src := image.Sources{Envoy: def(k.envoy, "build/envoy"), Module: modules.ModulePath(plan.FlavorWAF), PodBinary: def(k.podBinary, "build/wafsweep-pod")}
	if slices.Contains(p.Flavors, plan.FlavorWAFAccelerated) {
		src.AcceleratedModule = modules.ModulePath(plan.FlavorWAFAccelerated)
		src.HyperscanCache = hyperscanCache(repoRoot)
	}
	return launch.New(launch.Options{
		Target: name, Kubeconfig: k.kubeconfig, Context: k.context, Namespace: k.namespace,
		Registry: k.registry, Image: k.image, KindCluster: k.kindCluster, KindNodeImage: k.kindNodeImage,
		ProxyCores: k.proxyCores, LoadgenCores: k.loadgenCores, ProxyMemory: k.proxyMemory,
		Sources: src, AllowSharedCPUs: k.allowSharedCPUs, EnvoyEnv: p.EnvoyEnv, Progress: progress,
	}, sweepID)
}

// moduleBuilds names the module builds of the module flag: the stock
// corazawaf build, and those beside it.
type moduleBuilds string

// ModulePath is the build a flavor loads.
func (m moduleBuilds) ModulePath(flavor string) string { return local.BuildFor(flavor, string(m)) }

// hyperscanCache is the directory of the accelerated build's compiled
// databases that `make build` fills ($CORAZAWAF_HS_CACHE, which the
// Makefile sets, else <repo>/build/hyperscan), or "" when there is none:
// the pods then compile them at Envoy's start.
func hyperscanCache(repoRoot string) string {
	dir := os.Getenv("CORAZAWAF_HS_CACHE")
	if dir == "" && repoRoot != "" {
		dir = filepath.Join(repoRoot, "build", "hyperscan")
	}
	if fi, err := os.Stat(dir); dir == "" || err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}

// startable is a target that connects when the sweep starts and is closed
// after it (the Kubernetes targets).
type startable interface {
	Start(ctx context.Context) error
	Close(ctx context.Context) error
}

// closeTimeout bounds the teardown after the sweep, Ctrl-C included.
const closeTimeout = 5 * time.Minute

// kubeSweepOptions is sweepOptions for --target kind and kube: errs are the
// problems found so far, reported together with the target's own.
func (f sweepFlags) kubeSweepOptions(p plan.Plan, errs []error, root, resultsDir, rulesets, module string) (sweep.Options, error) {
	builds := moduleBuilds(module)
	v := planVersions(p, builds)
	var identity, id string
	if p.Validate() == nil {
		var err error
		// The flags name the cluster, the image and the CPU assignment.
		identity, id, err = sweepIdentity(f.target, p, fmt.Sprintf("%+v", f.kube), v.Build())
		errs = append(errs, err)
	}
	if f.sweepID != "" {
		id = f.sweepID
	}
	tgt, err := f.kube.target(f.target, id, root, builds, p, os.Stderr)
	// The flavors are checked even when the target's own flags are bad:
	// every problem is reported at once.
	errs = append(errs, err, kube.CheckPlan(p))
	if err := errors.Join(errs...); err != nil {
		return sweep.Options{}, err
	}
	return sweep.Options{
		Plan: p, Target: tgt, SweepID: id, Identity: identity, OutDir: filepath.Join(resultsDir, id), RulesetsDir: rulesets,
		CommandLine: os.Args, Versions: v, Progress: os.Stderr,
	}, nil
}
