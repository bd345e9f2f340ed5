// Package launch turns the command line's Kubernetes options into a ready
// target: for kind, create or reuse the cluster and load the image into
// its nodes; for any other cluster, read the kubeconfig and push the image
// to the registry the user names (or use an image they name). Then the
// kube target prepares the namespace. The command only parses flags.
package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/target"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/image"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/kind"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/spec"
)

// Options are the command line's Kubernetes settings.
type Options struct {
	Target     string // dataset.TargetKind or dataset.TargetKube
	Kubeconfig string // kube: path (default $KUBECONFIG, ~/.kube/config)
	Context    string // kube: kubeconfig context (default current)
	Namespace  string // default wafsweep-<sweep id>
	// Registry is where the image is pushed for a remote cluster, e.g.
	// europe-docker.pkg.dev/PROJECT/wafsweep; Image names a prebuilt one
	// instead (nothing is built or pushed).
	Registry, Image string
	KindCluster     string // default "wafsweep"
	KindNodeImage   string // default kind's
	ProxyCores      int    // Envoy's cores and --concurrency
	LoadgenCores    int
	ProxyMemory     string
	Sources         image.Sources
	AllowSharedCPUs bool
	EnvoyEnv        []string // KEY=VALUE, added to Envoy's container (plan.Plan.EnvoyEnv)
	Progress        io.Writer
}

// Validate reports every problem at once, before anything starts.
func (o Options) Validate() error {
	var errs []error
	switch o.Target {
	case dataset.TargetKind:
		if o.Registry != "" {
			errs = append(errs, errors.New("--registry: kind loads the image into its nodes, no registry is used"))
		}
		if o.ProxyCores >= 1 && o.LoadgenCores >= 1 {
			if _, err := o.kindLayout(); err != nil {
				errs = append(errs, err)
			}
		}
	case dataset.TargetKube:
		if o.Registry == "" && o.Image == "" {
			errs = append(errs, errors.New("--target kube needs --registry (where to push the image, e.g. REGION-docker.pkg.dev/PROJECT/REPO) or --image (a pushed one)"))
		}
	default:
		errs = append(errs, fmt.Errorf("--target %q: use local, kind or kube", o.Target))
	}
	if o.ProxyCores < 1 {
		errs = append(errs, fmt.Errorf("--proxy-cores %d: Envoy needs at least one whole core", o.ProxyCores))
	}
	if o.LoadgenCores < 1 {
		errs = append(errs, fmt.Errorf("--loadgen-cores %d: Fortio needs at least one whole core", o.LoadgenCores))
	}
	if o.ProxyMemory != "" {
		if _, err := resource.ParseQuantity(o.ProxyMemory); err != nil {
			errs = append(errs, fmt.Errorf("--proxy-memory %q: %w", o.ProxyMemory, err))
		}
	}
	if o.Namespace != "" && !dnsLabel.MatchString(o.Namespace) {
		errs = append(errs, fmt.Errorf("--namespace %q is not a DNS label", o.Namespace))
	}
	if o.Image == "" {
		errs = append(errs, checkSources(o.Sources)...)
	}
	return errors.Join(errs...)
}

// checkSources reports each missing image source. The accelerated build
// is named only for a plan that loads it.
func checkSources(src image.Sources) []error {
	type source struct{ flag, path string }
	sources := []source{{"--envoy", src.Envoy}, {"--module", src.Module}, {"--pod-binary", src.PodBinary}}
	if src.AcceleratedModule != "" {
		sources = append(sources, source{"--module's accelerated build (for waf-accelerated)", src.AcceleratedModule})
	}
	var errs []error
	for _, s := range sources {
		if _, err := os.Stat(s.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (make build makes it)", s.flag, err))
		}
	}
	return errs
}

// kindLayout lays this machine's CPUs out over the kind nodes: disjoint
// for the proxy and the load generator workers, or (--allow-shared-cpus on
// a machine too small) CPU 0 reserved on every node.
func (o Options) kindLayout() (kind.Layout, error) {
	machine, err := kind.MachineCPUs()
	if err != nil {
		return kind.Layout{}, err
	}
	return kind.PlanLayout(machine, o.ProxyCores, o.LoadgenCores, spec.Options{}.Defaults().Backend.Cores(), o.AllowSharedCPUs)
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// NamespaceFor is the default namespace of a sweep: its own.
func NamespaceFor(sweepID string) string {
	ns := "wafsweep-" + strings.ToLower(sweepID)
	ns = regexp.MustCompile(`[^a-z0-9-]+`).ReplaceAllString(ns, "-")
	if len(ns) > 63 {
		ns = ns[:63]
	}
	return strings.TrimRight(ns, "-")
}

// Target is a Kubernetes target that starts (cluster, image, namespace)
// when the sweep is about to run and is closed after it.
type Target struct {
	opts    Options
	sweepID string
	kube    *kube.Kube
	kind    *kind.Cluster
	workDir string
}

// New validates opts; nothing is contacted yet.
func New(opts Options, sweepID string) (*Target, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	return &Target{opts: opts, sweepID: sweepID}, nil
}

// Name implements target.Target.
func (t *Target) Name() string { return t.opts.Target }

// Describe implements target.Target.
func (t *Target) Describe() target.Description {
	if t.kube == nil {
		return target.Description{Notes: []string{"kubernetes target not started"}}
	}
	return t.kube.Describe()
}

// Deploy implements target.Target.
func (t *Target) Deploy(ctx context.Context, d target.Deployment) (target.Deployed, error) {
	if t.kube == nil {
		return nil, errors.New("kubernetes target not started")
	}
	return t.kube.Deploy(ctx, d)
}

// CheckModule is satisfied by the image; it rejects the flavors the image
// cannot run.
func (t *Target) CheckModule(p plan.Plan) error { return kube.CheckPlan(p) }

// Start connects to (or creates) the cluster, makes the image available
// to it, and prepares the sweep's namespace.
func (t *Target) Start(ctx context.Context) error {
	o := t.opts
	var err error
	t.workDir, err = os.MkdirTemp("", "wafsweep-image-")
	if err != nil {
		return err
	}
	var (
		cfg   *rest.Config
		ref   = o.Image
		notes []string
		pull  = corev1.PullIfNotPresent
		// kind's nodes are containers sharing this machine's CPUs.
		sharedNodes = o.Target == dataset.TargetKind
	)
	switch o.Target {
	case dataset.TargetKind:
		layout, err := o.kindLayout()
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Progress, "[kind] using cluster %s (%s)\n", orDefault(o.KindCluster, kind.DefaultName), layout)
		if t.kind, err = kind.Ensure(o.KindCluster, o.KindNodeImage, layout); err != nil {
			return err
		}
		if t.kind.Created {
			notes = append(notes, "kind cluster created: "+layout.String())
		} else {
			notes = append(notes, "kind cluster reused: its nodes keep the CPUs they were created with; the proxy's cpuset is checked against the load generator's")
		}
		raw, err := t.kind.Kubeconfig()
		if err != nil {
			return err
		}
		if cfg, err = clientcmd.RESTConfigFromKubeConfig(raw); err != nil {
			return err
		}
		if ref == "" {
			if ref, err = t.buildAndLoadIntoKind(); err != nil {
				return err
			}
		}
		pull = corev1.PullNever
		notes = append(notes, "kind: nodes are containers on this machine, sharing its caches, memory bandwidth and kernel: reproduce the method here, plan capacity with a real cluster")
	case dataset.TargetKube:
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		if o.Kubeconfig != "" {
			rules.ExplicitPath = o.Kubeconfig
		}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
		if err != nil {
			return fmt.Errorf("kubeconfig: %w", err)
		}
		if ref == "" {
			if ref, err = t.buildAndPush(ctx); err != nil {
				return err
			}
		}
	}
	so := spec.Options{
		Namespace: orDefault(o.Namespace, NamespaceFor(t.sweepID)), SweepID: t.sweepID,
		Image: ref, PullPolicy: pull,
		Proxy:    spec.Size{MilliCPU: int64(o.ProxyCores) * 1000},
		Loadgen:  spec.Size{MilliCPU: int64(o.LoadgenCores) * 1000},
		EnvoyEnv: o.EnvoyEnv,
	}
	if o.ProxyMemory != "" {
		so.Proxy.Memory = resource.MustParse(o.ProxyMemory)
	}
	t.kube, err = kube.New(kube.Options{Name: o.Target, Config: cfg, Spec: so, AllowSharedCPUs: o.AllowSharedCPUs,
		NodesShareCPUs: sharedNodes, Notes: notes, Progress: o.Progress})
	if err != nil {
		return err
	}
	return t.kube.Prepare(ctx)
}

func (t *Target) buildImage() (image.Built, error) {
	fmt.Fprintf(t.opts.Progress, "[%s] building the image (Envoy, module, wafsweep-pod)\n", t.opts.Target)
	return image.Build(t.opts.Sources, t.workDir)
}

// localRepo names images that never leave this machine.
const localRepo = "wafsweep.local/wafsweep-pod"

func (t *Target) buildAndLoadIntoKind() (string, error) {
	built, err := t.buildImage()
	if err != nil {
		return "", err
	}
	ref := localRepo + ":" + built.Tag
	archive := filepath.Join(t.workDir, "image.tar")
	if err := image.WriteTarball(archive, map[string]v1.Image{ref: built.Image}); err != nil {
		return "", err
	}
	raw, err := os.ReadFile(archive)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(t.opts.Progress, "[kind] loading %s into the nodes\n", ref)
	return ref, t.kind.LoadImageArchive(raw)
}

func (t *Target) buildAndPush(ctx context.Context) (string, error) {
	built, err := t.buildImage()
	if err != nil {
		return "", err
	}
	ref := strings.TrimRight(t.opts.Registry, "/") + "/wafsweep-pod:" + built.Tag
	fmt.Fprintf(t.opts.Progress, "[kube] pushing %s\n", ref)
	return image.Push(ctx, ref, built.Image)
}

// Close deletes the sweep's namespace (also after Ctrl-C: ctx should be a
// fresh one) and the image work directory. A kind cluster is kept for the
// next sweep.
func (t *Target) Close(ctx context.Context) error {
	var errs []error
	if t.kube != nil {
		errs = append(errs, t.kube.Close(ctx))
	}
	if t.workDir != "" {
		errs = append(errs, os.RemoveAll(t.workDir))
	}
	return errors.Join(errs...)
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
