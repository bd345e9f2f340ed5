package remoteload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wafbackend "github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/tlscert"
)

// backend counts the requests that reach it.
func backend(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func pod(t *testing.T) Client {
	t.Helper()
	srv := httptest.NewServer(Handler())
	t.Cleanup(srv.Close)
	return Client{BaseURL: srv.URL}
}

// A remote step is loadgen's own: counted inside the window call by call,
// its edges reported here while the load runs, a window apart.
func TestRemoteStepIsWindowExact(t *testing.T) {
	be, hits := backend(t)
	var mu sync.Mutex
	var edges []loadgen.Edge
	var at, sent []time.Time // when each edge arrived, and when the pod marked it
	spec := loadgen.Spec{URL: be.URL + "/", QPS: 200, Connections: 2, Warmup: 500 * time.Millisecond, Duration: 2 * time.Second,
		OnEdge: func(e loadgen.Edge, marked time.Time) {
			mu.Lock()
			defer mu.Unlock()
			edges, at, sent = append(edges, e), append(at, time.Now()), append(sent, marked)
		}}
	res, err := pod(t).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Window == nil {
		t.Fatal("no window: the remote step was not window-exact")
	}
	if len(edges) != 2 || edges[0] != loadgen.WindowStart || edges[1] != loadgen.WindowEnd {
		t.Fatalf("edges %v, want start then end", edges)
	}
	if gap := at[1].Sub(at[0]); gap < 1900*time.Millisecond || gap > 2300*time.Millisecond {
		t.Errorf("edges arrived %v apart, the window is 2s", gap)
	}
	if !sent[0].Equal(res.Window.Start) || !sent[1].Equal(res.Window.End) {
		t.Errorf("the edges were marked at %v, the window is %v to %v", sent, res.Window.Start, res.Window.End)
	}
	if w := res.Window.Seconds(); w < 1.95 || w > 2.1 {
		t.Errorf("window %.3f s, want 2", w)
	}
	// The edges are when the pod's timers fired, so the window may run a
	// few milliseconds long; what it schedules follows the measured length.
	if want := int64(math.Round(spec.QPS * res.Window.Seconds())); res.Scheduled != want || res.Completed < want-10 || res.Completed > want+10 {
		t.Errorf("completed %d of %d scheduled in the window, want about %d of %d", res.Completed, res.Scheduled, want, want)
	}
	if res.RunCompleted <= res.Completed || int64(res.RunCompleted) > hits.Load() {
		t.Errorf("run completed %d, window %d, backend saw %d: the run must include the warm-up", res.RunCompleted, res.Completed, hits.Load())
	}
	if res.Window.Corrected.Samples == 0 || res.P99Ms <= 0 || res.LoadgenCPUSeconds <= 0 || len(res.RawJSON) == 0 {
		t.Errorf("result lost on the way: samples %d, p99 %v, loadgen CPU %v, raw %d bytes",
			res.Window.Corrected.Samples, res.P99Ms, res.LoadgenCPUSeconds, len(res.RawJSON))
	}
}

// Runs sent together cross the wire as loadgen.RunAll returns them: each
// run's own result, and their union without the runs sent Apart.
func TestRemoteStepOfSeveralRuns(t *testing.T) {
	be, _ := backend(t)
	edges := 0
	benign := loadgen.Spec{URL: be.URL + "/", QPS: 100, Connections: 2, Warmup: 300 * time.Millisecond, Duration: 2 * time.Second,
		OnEdge: func(loadgen.Edge, time.Time) { edges++ }}
	attack := loadgen.Spec{URL: be.URL + "/admin", QPS: 5, Connections: 1, Warmup: benign.Warmup, Duration: benign.Duration, Apart: true}
	all, each, err := pod(t).RunAll(context.Background(), []loadgen.Spec{benign, attack})
	if err != nil {
		t.Fatal(err)
	}
	if edges != 2 || len(each) != 2 || each[1].Window == nil || each[1].Window.Completed == 0 {
		t.Fatalf("%d edges, %d results (%+v): want 2 and 2, the apart run measured", edges, len(each), each)
	}
	if all.Window == nil || all.TargetQPS != 100 || all.Window.Completed != each[0].Window.Completed {
		t.Errorf("union: target %v, window %+v: want the benign run's alone (%+v)", all.TargetQPS, all.Window, each[0].Window)
	}
	if _, _, err := pod(t).RunAll(context.Background(), nil); err == nil {
		t.Error("a step of no run was sent")
	}
}

// Cancelling the client ends the remote run: the handler is free for the
// next step soon after, and the load stops reaching the backend.
func TestCancelEndsTheRemoteRun(t *testing.T) {
	be, hits := backend(t)
	c := pod(t)
	ctx, cancel := context.WithCancel(context.Background())
	spec := loadgen.Spec{URL: be.URL + "/", QPS: 100, Connections: 1, Duration: time.Minute,
		OnEdge: func(loadgen.Edge, time.Time) { cancel() }}
	start := time.Now()
	if _, err := c.Run(ctx, spec); err == nil {
		t.Fatal("a cancelled step returned no error")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	time.Sleep(300 * time.Millisecond)
	before := hits.Load()
	time.Sleep(500 * time.Millisecond)
	if after := hits.Load(); after != before {
		t.Errorf("the backend still got %d requests after the cancel", after-before)
	}
	short := loadgen.Spec{URL: be.URL + "/", QPS: 100, Connections: 1, Duration: 200 * time.Millisecond}
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err = c.Run(context.Background(), short); err == nil || !strings.Contains(err.Error(), "already running") {
			break
		}
	}
	if err != nil {
		t.Errorf("the next step after a cancel: %v", err)
	}
}

// The pod's errors reach the orchestrator with their text: a bad step, a
// second step while one runs.
func TestRemoteErrorsSayWhy(t *testing.T) {
	be, _ := backend(t)
	c := pod(t)
	_, err := c.Run(context.Background(), loadgen.Spec{URL: be.URL + "/", QPS: 100, Connections: 1, Duration: time.Second, Host: "10.0.0.1"})
	if err == nil || !strings.Contains(err.Error(), "numeric") {
		t.Errorf("bad spec: %v, want loadgen's reason", err)
	}
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(context.Background(), loadgen.Spec{URL: be.URL + "/", QPS: 50, Connections: 1, Duration: 2 * time.Second,
			OnEdge: func(e loadgen.Edge, _ time.Time) {
				if e == loadgen.WindowStart {
					close(started)
				}
			}})
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("first step ended before its window: %v", err)
	}
	if _, err := c.Run(context.Background(), loadgen.Spec{URL: be.URL + "/", QPS: 50, Connections: 1, Duration: time.Second}); err == nil ||
		!strings.Contains(err.Error(), "409") {
		t.Errorf("second concurrent step: %v, want 409 Conflict", err)
	}
	if err := <-done; err != nil {
		t.Errorf("first step: %v", err)
	}
}

// A TLS step carries its CA: the pod cannot read the orchestrator's file,
// so the handler runs with a copy of its own, and the real load generator
// verifies the proxy with it, by name, through the address it resolves to.
func TestTLSStepCarriesItsCA(t *testing.T) {
	certs, err := tlscert.Generate(t.TempDir(), tlscert.Spec{DNSNames: []string{loadgen.DefaultHost}})
	if err != nil {
		t.Fatal(err)
	}
	be, err := wafbackend.StartWith("127.0.0.1:0", wafbackend.Options{HTTP2: true, CertFile: certs.Cert, KeyFile: certs.Key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	spec := loadgen.Spec{URL: fmt.Sprintf("https://%s:%d/", loadgen.DefaultHost, be.Port()), Resolve: "127.0.0.1", CAFile: certs.CA,
		HTTP2: true, QPS: 100, Connections: 2, Duration: time.Second}

	var seen []byte
	stand := httptest.NewServer(Serve(func(_ context.Context, specs []loadgen.Spec) (loadgen.Result, []loadgen.Result, error) {
		if specs[0].CAFile == certs.CA {
			return loadgen.Result{}, nil, errors.New("the handler was given the orchestrator's path")
		}
		var err error
		seen, err = os.ReadFile(specs[0].CAFile)
		return loadgen.Result{}, []loadgen.Result{{}}, err
	}))
	t.Cleanup(stand.Close)
	if _, err := (Client{BaseURL: stand.URL}).Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if want, _ := os.ReadFile(certs.CA); !bytes.Equal(seen, want) {
		t.Errorf("the handler's CA holds %q, want the orchestrator's", seen)
	}

	res, err := pod(t).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.CompletionRatio() < 0.99 || res.SocketErrors != 0 || be.Recent()[0].Proto != "HTTP/2.0" {
		t.Errorf("completed %d of %d, socket errors %d, over %s", res.Completed, res.Scheduled, res.SocketErrors, be.Recent()[0].Proto)
	}
}
