package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	dmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_modules/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/wrapperspb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wafsweep/wafsweep/filter/waf"
	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/cgroup"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/remoteload"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/spec"
)

// Stand-ins serve what the pods on kwok's fake nodes would: kwok forwards a
// port-forward to a pod's port to the stand-in of that port. Everything
// the orchestrator does is real up to these boundaries.

// ServeLocal serves h on a free 127.0.0.1 port until the listener is
// closed.
func ServeLocal(h http.Handler) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go http.Serve(ln, h)
	return ln, nil
}

// LoadgenStub is the load generator pod at its boundary: the real
// protocol (remoteload.Serve) in front of a stand-in for loadgen.RunAll,
// which records each step's runs, reports the window's edges a quarter of the window
// apart and answers that every scheduled call got a 200 in about 1 ms.
type LoadgenStub struct {
	mu        sync.Mutex
	specs     []loadgen.Spec
	spans     [][2]time.Time // every run's start and end (zero while running)
	completed int64          // calls the windows so far completed
}

// Completed counts the calls completed in every window so far, updated
// before the window's end is reported.
func (f *LoadgenStub) Completed() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.completed
}

// BusySeconds is how long runs have been active so far: the proxy's
// stand-in cgroup burns CPU while load runs.
func (f *LoadgenStub) BusySeconds() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	total := 0.0
	for _, s := range f.spans {
		end := s[1]
		if end.IsZero() {
			end = now
		}
		total += end.Sub(s[0]).Seconds()
	}
	return total
}

// Specs are the runs received so far, step after step.
func (f *LoadgenStub) Specs() []loadgen.Spec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.specs)
}

// Handler serves the stub through the real protocol.
func (f *LoadgenStub) Handler() http.Handler { return remoteload.Serve(f.run) }

func (f *LoadgenStub) run(ctx context.Context, specs []loadgen.Spec) (loadgen.Result, []loadgen.Result, error) {
	spec := specs[0]
	f.mu.Lock()
	f.specs = append(f.specs, specs...)
	span := len(f.spans)
	f.spans = append(f.spans, [2]time.Time{time.Now()})
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.spans[span][1] = time.Now()
		f.mu.Unlock()
	}()
	wait := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := wait(spec.Warmup / 4); err != nil {
		return loadgen.Result{}, nil, err
	}
	var w loadgen.Window
	w.Start = time.Now()
	if spec.OnEdge != nil {
		spec.OnEdge(loadgen.WindowStart, w.Start)
	}
	if err := wait(spec.Duration / 4); err != nil {
		return loadgen.Result{}, nil, err
	}
	w.End = w.Start.Add(spec.Duration)
	res, each := stubResults(specs, w)
	f.mu.Lock()
	for _, r := range each { // the proxy sees every run, attacks included
		f.completed += r.Completed
	}
	f.mu.Unlock()
	if spec.OnEdge != nil {
		spec.OnEdge(loadgen.WindowEnd, time.Now())
	}
	return res, each, nil
}

// stubResults are each run's stubResult, and their union: the runs not
// sent Apart as one run at their summed rate over their connections.
func stubResults(specs []loadgen.Spec, w loadgen.Window) (loadgen.Result, []loadgen.Result) {
	each := make([]loadgen.Result, len(specs))
	union := specs[0]
	union.QPS, union.Connections = 0, 0
	for i, s := range specs {
		each[i] = stubResult(s, w)
		if !s.Apart {
			union.QPS, union.Connections = union.QPS+s.QPS, union.Connections+s.Connections
		}
	}
	return stubResult(union, w), each
}

// stubResult is a window in which every scheduled call got a 200 in
// about 1 ms, sent on time; a 403, as from a WAF, for a run marked as
// attacks (backend.HeaderAttack).
func stubResult(spec loadgen.Spec, w loadgen.Window) loadgen.Result {
	w.Scheduled = spec.QPS * spec.Duration.Seconds()
	n := int64(w.Scheduled)
	w.Completed, w.OK, w.Intended = n, n, n
	status := http.StatusOK
	if _, attack := spec.Headers[backend.HeaderAttack]; attack {
		status, w.OK, w.Non2xx = http.StatusForbidden, 0, n
	}
	w.Raw = loadgen.Latency{Samples: n, P50Ms: 1, P90Ms: 1.05, P99Ms: 1.09, P999Ms: 1.09, MaxMs: 1.1}
	w.Corrected = w.Raw
	w.Lateness = loadgen.Latency{Samples: n, P50Ms: 0.01, P90Ms: 0.02, P99Ms: 0.05, P999Ms: 0.08, MaxMs: 0.1}
	l := w.Corrected
	return loadgen.Result{
		TargetQPS: spec.QPS, ActualQPS: w.AchievedQPS(), Duration: w.End.Sub(w.Start),
		Scheduled: n, Completed: n, RunCompleted: n + int64(spec.QPS*spec.Warmup.Seconds()),
		SocketsOpened: int64(spec.Connections), Codes: map[int]int64{status: n}, Non2xx: w.Non2xx,
		P50Ms: l.P50Ms, P90Ms: l.P90Ms, P99Ms: l.P99Ms, P999Ms: l.P999Ms, MaxMs: l.MaxMs,
		LoadgenCPUSeconds: 0.01, RawJSON: []byte("{}"), Window: &w,
	}
}

// FakeNodeCPUModel is the processor the agent stand-in reports.
const FakeNodeCPUModel = "kwok virtual CPU"

// AgentStandIn serves the real cgroup agent handler over a cgroup v2 tree
// it makes up: each container read gets a directory on first sight, whose
// CPU usage grows by 2% of a core when idle and by half a core more while
// load runs (busy). Envoy gets the proxy's cpuset, others the load
// generator's; the agent's own (the shared pool) is "0-1".
func AgentStandIn(root string, proxyCPUs, otherCPUs string, busy func() float64) http.Handler {
	os.MkdirAll(root, 0o755)
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu memory\n"), 0o644)
	reader := &cgroup.Reader{Root: root}
	real := cgroup.Handler(reader, func() (string, error) { return "0-1", nil })
	var mu sync.Mutex
	born := map[string]time.Time{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cpu" {
			// The kwok nodes' processor, which no workstation has.
			json.NewEncoder(w).Encode(cgroup.NodeCPU{Model: FakeNodeCPUModel, CPUs: 4})
			return
		}
		q := r.URL.Query()
		if uid, id := q.Get("pod"), q.Get("id"); uid != "" && id != "" {
			dir := filepath.Join(root, "kubepods.slice", "kubepods-pod"+strings.ReplaceAll(uid, "-", "_")+".slice", "cri-containerd-"+id+".scope")
			mu.Lock()
			start, ok := born[dir]
			if !ok {
				start = time.Now()
				born[dir] = start
			}
			mu.Unlock()
			cpus := otherCPUs
			if strings.HasSuffix(id, "-envoy") {
				cpus = proxyCPUs
			}
			usec := int64((0.02*time.Since(start).Seconds() + 0.5*busy()) * 1e6)
			os.MkdirAll(dir, 0o755)
			files := map[string]string{
				"cpu.stat":              fmt.Sprintf("usage_usec %d\nuser_usec %d\nsystem_usec 0\n", usec, usec),
				"memory.current":        "73400320\n",
				"memory.stat":           "anon 62914560\ninactive_file 10485760\n",
				"memory.peak":           "83886080\n",
				"cpuset.cpus.effective": cpus + "\n",
			}
			for name, content := range files {
				os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
			}
		}
		real.ServeHTTP(w, r)
	})
}

// EnvoyAdminStandIn answers Envoy's /ready, and /stats with one counter,
// downstream_rq_completed, which counts what the load generator stand-in
// says completed: the proxy's count at the window's edges agrees with the
// load generator's, as a real Envoy's does.
func EnvoyAdminStandIn(completed func() int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ready":
			io.WriteString(w, "LIVE\n")
		case "/stats":
			fmt.Fprintf(w, `{"stats":[{"name":"http.%s.downstream_rq_completed","value":%d}]}`, envoyconfig.HTTPStatPrefix, completed())
		default:
			http.NotFound(w, r)
		}
	})
}

// ProxyStandIn answers what Envoy in front of the backend would: for a
// bootstrap without the WAF, 200 to everything; with it, the corazawaf
// filter logic (package waf, the module's own Go code) built from the
// filter config found in the bootstrap ConfigMap the running Envoy pod
// mounts, so the pre-check judges the rules the cluster really got.
type ProxyStandIn struct {
	Client kubernetes.Interface

	mu      sync.Mutex
	filters map[string]*waf.Filter // bootstrap hash -> filter (nil: no WAF)
}

// ServeHTTP answers as Envoy with the current bootstrap would.
func (p *ProxyStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f, err := p.currentFilter(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if f != nil {
		if reply := inspect(f, r, body); reply != nil {
			w.WriteHeader(reply.Status)
			io.WriteString(w, reply.Body)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"ok":true}`)
}

// currentFilter finds the running Envoy Deployment's bootstrap.
func (p *ProxyStandIn) currentFilter(ctx context.Context) (*waf.Filter, error) {
	deps, err := p.Client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: spec.LabelComponent + "=" + spec.Envoy})
	if err != nil {
		return nil, err
	}
	for _, d := range deps.Items {
		if d.Spec.Replicas == nil || *d.Spec.Replicas == 0 {
			continue
		}
		hash := d.Spec.Template.Annotations[spec.AnnotationBootstrapHash]
		p.mu.Lock()
		f, ok := p.filters[hash]
		p.mu.Unlock()
		if ok {
			return f, nil
		}
		cm, err := p.Client.CoreV1().ConfigMaps(d.Namespace).Get(ctx, spec.BootstrapConfigMapName(hash), metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		cfg, err := wafConfigOf([]byte(cm.Data[spec.BootstrapFile]))
		if err != nil {
			return nil, err
		}
		if cfg != "" {
			if f, err = waf.NewFilter([]byte(cfg), quietLog{}); err != nil {
				return nil, err
			}
		}
		p.mu.Lock()
		if p.filters == nil {
			p.filters = map[string]*waf.Filter{}
		}
		p.filters[hash] = f
		p.mu.Unlock()
		return f, nil
	}
	return nil, errors.New("no running Envoy deployment")
}

// wafConfigOf extracts the corazawaf filter_config from a bootstrap.
func wafConfigOf(bootstrapJSON []byte) (string, error) {
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(bootstrapJSON, &b); err != nil {
		return "", err
	}
	for _, l := range b.GetStaticResources().GetListeners() {
		for _, fc := range l.GetFilterChains() {
			for _, nf := range fc.GetFilters() {
				var hcm hcmv3.HttpConnectionManager
				if err := nf.GetTypedConfig().UnmarshalTo(&hcm); err != nil {
					continue
				}
				for _, hf := range hcm.GetHttpFilters() {
					if hf.GetName() != "corazawaf" {
						continue
					}
					var dm dmfilterv3.DynamicModuleFilter
					if err := hf.GetTypedConfig().UnmarshalTo(&dm); err != nil {
						return "", err
					}
					var s wrapperspb.StringValue
					if err := dm.GetFilterConfig().UnmarshalTo(&s); err != nil {
						return "", err
					}
					return s.GetValue(), nil
				}
			}
		}
	}
	return "", nil
}

// inspect runs one request through the filter's request phases.
func inspect(f *waf.Filter, r *http.Request, body []byte) *waf.LocalReply {
	stream, err := f.NewStream(nil)
	if err != nil {
		return &waf.LocalReply{Status: 500, Body: err.Error()}
	}
	defer stream.Complete()
	head := waf.RequestHead{
		Conn:   waf.Connection{ClientIP: "10.244.0.9", ClientPort: 40000, ServerIP: "10.244.0.5", ServerPort: 10000},
		Method: r.Method, Path: r.URL.RequestURI(), Authority: r.Host, HasAuthority: true,
		Protocol: "HTTP/1.1", EndOfStream: len(body) == 0,
	}
	for name, values := range r.Header {
		for _, v := range values {
			head.Headers = append(head.Headers, waf.Header{Name: strings.ToLower(name), Value: v})
		}
	}
	if d := stream.OnRequestHeaders(head); d.Action == waf.Reply {
		return d.Reply
	}
	if len(body) > 0 {
		if d := stream.OnRequestBody([][]byte{body}, true); d.Action == waf.Reply {
			return d.Reply
		}
	}
	return nil
}

type quietLog struct{}

func (quietLog) Log(waf.Level, string)  {}
func (quietLog) Enabled(waf.Level) bool { return false }

// BackendStandIn answers every request with 200 and a small JSON body.
func BackendStandIn() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
}

// BackendStatsStandIn answers the backend's stats listener: every call the
// load generator stand-in completed reached it, none of them marked (the
// proxy stand-in answers the attacks itself).
func BackendStatsStandIn(completed func() int64) http.Handler {
	return backend.StatsHandler(func() backend.Stats { return backend.Stats{Requests: completed()} })
}

// FakeCluster is a control plane with kwok nodes modelling the two pools
// (proxy-a, proxy-b, loadgen-a, loadgen-b, 4 CPUs each), and stand-ins
// behind every pod port the targets port-forward to.
type FakeCluster struct {
	*ControlPlane
	Loadgen   *LoadgenStub
	listeners []net.Listener
}

// Stop ends the control plane and kwok, then the stand-ins.
func (fc *FakeCluster) Stop() {
	fc.ControlPlane.Stop()
	for _, ln := range fc.listeners {
		ln.Close()
	}
}

// StartFakeCluster starts it in dir. tainted nodes take only pods that
// tolerate FakeTolerations (a cluster that also has a real node); others
// take any pod.
func StartFakeCluster(ctx context.Context, binDir, dir string, tainted bool) (*FakeCluster, error) {
	cp, err := StartControlPlane(ctx, binDir, dir)
	if err != nil {
		return nil, err
	}
	fc := &FakeCluster{ControlPlane: cp, Loadgen: &LoadgenStub{}}
	ports := spec.DefaultPorts()
	standIns := map[int32]http.Handler{
		ports.EnvoyListen:  &ProxyStandIn{Client: cp.Client},
		ports.Backend:      BackendStandIn(),
		ports.BackendStats: BackendStatsStandIn(fc.Loadgen.Completed),
		ports.EnvoyAdmin:   EnvoyAdminStandIn(fc.Loadgen.Completed),
		ports.Fortio:       fc.Loadgen.Handler(),
		ports.Agent:        AgentStandIn(filepath.Join(dir, "cgroup"), "2-3", "4-5", fc.Loadgen.BusySeconds),
	}
	forwards := map[int32]string{}
	for port, h := range standIns {
		ln, err := ServeLocal(h)
		if err != nil {
			fc.Stop()
			return nil, err
		}
		fc.listeners = append(fc.listeners, ln)
		forwards[port] = ln.Addr().String()
	}
	if _, err := cp.StartKwok(ctx, forwards); err != nil {
		fc.Stop()
		return nil, err
	}
	pool := func(name, role string) FakeNode {
		return FakeNode{Name: name, Labels: map[string]string{role: "true", "node.kubernetes.io/instance-type": "fake-4"}, CPU: "4", Memory: "16Gi", Tainted: tainted}
	}
	if err := cp.CreateFakeNodes(ctx,
		pool("proxy-a", spec.NodeLabelProxy), pool("proxy-b", spec.NodeLabelProxy),
		pool("loadgen-a", spec.NodeLabelLoadgen), pool("loadgen-b", spec.NodeLabelLoadgen),
	); err != nil {
		fc.Stop()
		return nil, fmt.Errorf("fake nodes: %w", err)
	}
	return fc, nil
}
