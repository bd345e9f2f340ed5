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
	"strconv"
	"strings"
	"sync"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/periodic"
	"fortio.org/fortio/stats"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	dmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/dynamic_modules/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/wrapperspb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wafsweep/wafsweep/filter/waf"
	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/cgroup"
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

// FortioStub is the Fortio REST API at its boundary: it records each run
// request and answers with a result in which every scheduled call
// succeeded, after the run's duration scaled down.
type FortioStub struct {
	mu       sync.Mutex
	requests []map[string]any
	results  map[string][]byte
	nextID   int64
	running  map[int64]time.Time // run ID -> end
	spans    [][2]time.Time      // every run's start and end
}

// BusySeconds is how long runs have been active so far: the proxy's
// stand-in cgroup burns CPU while load runs.
func (f *FortioStub) BusySeconds() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	total := 0.0
	for _, s := range f.spans {
		if now.Before(s[1]) {
			total += now.Sub(s[0]).Seconds()
		} else {
			total += s[1].Sub(s[0]).Seconds()
		}
	}
	return total
}

// NewFortioStub is a Fortio REST stand-in with no run yet.
func NewFortioStub() *FortioStub {
	return &FortioStub{results: map[string][]byte{}, running: map[int64]time.Time{}}
}

// Runs are the run requests received so far.
func (f *FortioStub) Runs() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.requests...)
}

// ServeHTTP implements the REST API.
func (f *FortioStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.URL.Path == "/fortio/rest/run" && r.Method == http.MethodPost:
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.requests = append(f.requests, req)
		f.nextID++
		id := fmt.Sprintf("stub-%d", f.nextID)
		raw, err := stubResult(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.results[id] = raw
		d, _ := time.ParseDuration(req["t"].(string))
		start := time.Now()
		f.running[f.nextID] = start.Add(d / 4)
		f.spans = append(f.spans, [2]time.Time{start, start.Add(d / 4)})
		json.NewEncoder(w).Encode(map[string]any{"Message": "started", "RunID": f.nextID, "ResultID": id, "Count": 1})
	case r.URL.Path == "/fortio/rest/status":
		id, _ := strconv.ParseInt(r.URL.Query().Get("runid"), 10, 64)
		statuses := map[string]any{}
		if end, ok := f.running[id]; ok && time.Now().Before(end) {
			statuses[strconv.FormatInt(id, 10)] = map[string]any{"RunID": id, "State": 2}
		}
		json.NewEncoder(w).Encode(map[string]any{"Statuses": statuses})
	case strings.HasPrefix(r.URL.Path, "/fortio/data/"):
		raw, ok := f.results[strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/fortio/data/"), ".json")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(raw)
	default:
		http.NotFound(w, r)
	}
}

// stubResult is a Fortio result in which all scheduled calls got 200 in
// about 1 ms.
func stubResult(req map[string]any) ([]byte, error) {
	qps, err := strconv.ParseFloat(req["qps"].(string), 64)
	if err != nil {
		return nil, err
	}
	d, err := time.ParseDuration(req["t"].(string))
	if err != nil {
		return nil, err
	}
	c, err := strconv.Atoi(req["c"].(string))
	if err != nil {
		return nil, err
	}
	n := loadgen.ScheduledCalls(qps, d, c)
	h := stats.NewHistogram(0, 1e-4)
	for i := int64(0); i < n; i++ {
		h.Record(0.001 + float64(i%10)*1e-5)
	}
	res := fhttp.HTTPRunnerResults{
		RunnerResults: periodic.RunnerResults{
			RequestedQPS: req["qps"].(string), ActualQPS: qps, ActualDuration: d, NumThreads: c,
			DurationHistogram: h.Export().CalcPercentiles([]float64{50, 90, 99, 99.9}),
		},
		RetCodes:    map[int]int64{200: n},
		SocketCount: int64(c),
	}
	return json.Marshal(res)
}

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

// EnvoyAdminStandIn answers Envoy's /ready.
func EnvoyAdminStandIn() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ready" {
			io.WriteString(w, "LIVE\n")
			return
		}
		http.NotFound(w, r)
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

// FakeCluster is a control plane with kwok nodes modelling the two pools
// (proxy-a, proxy-b, loadgen-a, loadgen-b, 4 CPUs each), and stand-ins
// behind every pod port the targets port-forward to.
type FakeCluster struct {
	*ControlPlane
	Fortio    *FortioStub
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
	fc := &FakeCluster{ControlPlane: cp, Fortio: NewFortioStub()}
	ports := spec.DefaultPorts()
	standIns := map[int32]http.Handler{
		ports.EnvoyListen: &ProxyStandIn{Client: cp.Client},
		ports.Backend:     BackendStandIn(),
		ports.EnvoyAdmin:  EnvoyAdminStandIn(),
		ports.Fortio:      fc.Fortio,
		ports.Agent:       AgentStandIn(filepath.Join(dir, "cgroup"), "2-3", "4-5", fc.Fortio.BusySeconds),
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
