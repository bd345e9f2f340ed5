package loadgen

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Runs sent together are measured over one window: each run's counts are
// its own, and their union sums the counts and pools the calls for the
// latency (one sample per intended call of every run).
func TestRunAllMeasuresEachRunAndTheirUnion(t *testing.T) {
	be := startBackend(t)
	edges := 0
	get := Spec{URL: be.URL() + "/get", QPS: 100, Connections: 2, Warmup: 200 * time.Millisecond, Duration: 2 * time.Second,
		OnEdge: func(Edge, time.Time) { edges++ }}
	post := Spec{URL: be.URL() + "/post", ContentType: "application/json", Body: []byte(`{"a":1}`), QPS: 50, Connections: 2,
		Warmup: get.Warmup, Duration: get.Duration}
	all, each, err := RunAll(context.Background(), []Spec{get, post})
	if err != nil {
		t.Fatal(err)
	}
	if len(each) != 2 || edges != 2 {
		t.Fatalf("%d results, %d edges: want 2 and 2", len(each), edges)
	}
	for i, spec := range []Spec{get, post} {
		r := each[i]
		checkScheduled(t, r, spec.QPS, spec.Duration)
		if r.CompletionRatio() < 0.97 || r.Non2xx != 0 {
			t.Errorf("run %d: completed %d of %d scheduled, non-2xx %d", i, r.Completed, r.Scheduled, r.Non2xx)
		}
	}
	w := all.Window
	if all.TargetQPS != 150 || all.Scheduled != each[0].Scheduled+each[1].Scheduled || all.Completed != each[0].Completed+each[1].Completed ||
		w.Corrected.Samples != each[0].Window.Corrected.Samples+each[1].Window.Corrected.Samples || all.SocketsOpened != 4 {
		t.Errorf("union: target %v, scheduled %d, completed %d, samples %d, sockets %d; runs %+v %+v",
			all.TargetQPS, all.Scheduled, all.Completed, w.Corrected.Samples, all.SocketsOpened, each[0].Window, each[1].Window)
	}
	if !(all.LoadgenCPUSeconds > 0) || !strings.HasPrefix(string(all.RawJSON), "[") {
		t.Errorf("union: CPU %v s, raw %.40s", all.LoadgenCPUSeconds, all.RawJSON)
	}
	paths := map[string]int{}
	for _, rec := range be.Recent() {
		paths[rec.Method+" "+rec.Path]++
	}
	if paths["GET /get"] == 0 || paths["POST /post"] == 0 {
		t.Errorf("the backend's recent requests hold %v: want both runs interleaved", paths)
	}
}

// Runs that could not share a window are refused before anything is sent.
func TestRunAllRefusesRunsThatCannotShareAWindow(t *testing.T) {
	be := startBackend(t)
	base := Spec{URL: be.URL(), QPS: 10, Connections: 1, Duration: time.Second}
	for _, tc := range []struct {
		name   string
		change func(*Spec)
		want   string
	}{
		{"another duration", func(s *Spec) { s.Duration = 2 * time.Second }, "share one window"},
		{"another warm-up", func(s *Spec) { s.Warmup = time.Second }, "share one window"},
		{"its own edges", func(s *Spec) { s.OnEdge = func(Edge, time.Time) {} }, "only the first spec's OnEdge"},
		{"an invalid run", func(s *Spec) { s.QPS = 0 }, "spec 1: QPS 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			second := base
			tc.change(&second)
			_, _, err := RunAll(context.Background(), []Spec{base, second})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	apartFirst := base
	apartFirst.Apart = true
	if _, _, err := RunAll(context.Background(), []Spec{apartFirst, base}); err == nil || !strings.Contains(err.Error(), "first run cannot be Apart") {
		t.Errorf("an Apart first run: err = %v", err)
	}
	if _, _, err := RunAll(context.Background(), nil); err == nil {
		t.Error("no run at all was accepted")
	}
	if n := be.Stats().Requests; n != 0 {
		t.Errorf("the backend saw %d requests, want none", n)
	}
}

// A run sent Apart is measured on its own and left out of the union: the
// union's counts, rate and latency are the other runs' only.
func TestRunAllKeepsApartRunsOutOfTheUnion(t *testing.T) {
	be := startBackend(t)
	benign := Spec{URL: be.URL() + "/get", QPS: 80, Connections: 2, Warmup: 200 * time.Millisecond, Duration: 2 * time.Second}
	attack := Spec{URL: be.URL() + "/admin", QPS: 20, Connections: 1, Warmup: benign.Warmup, Duration: benign.Duration, Apart: true}
	all, each, err := RunAll(context.Background(), []Spec{benign, attack})
	if err != nil {
		t.Fatal(err)
	}
	if len(each) != 2 || each[1].Window == nil || each[1].Window.Completed == 0 {
		t.Fatalf("the apart run was not measured: %+v", each)
	}
	if all.TargetQPS != 80 || all.Scheduled != each[0].Scheduled || all.Window.Completed != each[0].Window.Completed ||
		all.Window.Corrected.Samples != each[0].Window.Corrected.Samples || all.SocketsOpened != 2 {
		t.Errorf("union: target %v, scheduled %d, completed %d, samples %d, sockets %d: want the benign run's alone (%+v)",
			all.TargetQPS, all.Scheduled, all.Window.Completed, all.Window.Corrected.Samples, all.SocketsOpened, each[0].Window)
	}
}
