package fortio

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
)

// The client against Fortio's real REST server (the one the pods run),
// loading a real backend on 127.0.0.1: counts, codes and the headers the
// backend saw must be those of an in-process loadgen run.
func TestRunAgainstRealFortioServer(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	var bodies []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		h := r.Header.Clone()
		h.Set("Host", r.Host)
		h.Set("Method", r.Method)
		seen = append(seen, h)
		bodies = append(bodies, string(b))
		mu.Unlock()
		if strings.Contains(r.URL.Path, "deny") {
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	defer backend.Close()
	server := httptest.NewServer(Handler(t.TempDir()))
	defer server.Close()

	cases := []struct {
		name       string
		path       string
		body       string
		wantStatus int
	}{
		{"get", "/api/orders", "", 200},
		{"post json", "/api/orders", `{"order":{"id":1}}`, 200},
		{"denied", "/deny", "", 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			seen, bodies = nil, nil
			mu.Unlock()
			spec := loadgen.Spec{URL: backend.URL + c.path, QPS: 40, Connections: 2, Duration: time.Second, Body: []byte(c.body)}
			if c.body != "" {
				spec.ContentType = "application/json"
			}
			res, err := Client{BaseURL: server.URL, PollEvery: 100 * time.Millisecond}.Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			// Without catch-up a loaded machine may skip a few slots:
			// completed is at most scheduled, and every completed call has
			// the backend's status.
			if res.Scheduled != 40 || res.Completed < 20 || res.Completed > 40 {
				t.Errorf("scheduled %d completed %d, want 40 and 20-40", res.Scheduled, res.Completed)
			}
			if res.Codes[c.wantStatus] != res.Completed || len(res.Codes) != 1 {
				t.Errorf("codes %v, want all %d", res.Codes, c.wantStatus)
			}
			if c.wantStatus == 403 && res.Non2xx != res.Completed {
				t.Errorf("non-2xx %d of %d", res.Non2xx, res.Completed)
			}
			if !(res.P50Ms > 0 && res.P99Ms >= res.P50Ms) {
				t.Errorf("latency p50 %v p99 %v", res.P50Ms, res.P99Ms)
			}
			var raw map[string]any
			if err := json.Unmarshal(res.RawJSON, &raw); err != nil || raw["Payload"] != nil {
				t.Errorf("raw JSON keeps the payload or does not parse: %v", err)
			}
			if raw["SequentialWarmup"] != true {
				t.Errorf("the server warmed the connections up in parallel (SequentialWarmup %v)", raw["SequentialWarmup"])
			}
			mu.Lock()
			defer mu.Unlock()
			h := seen[0]
			if h.Get("Host") != loadgen.DefaultHost || h.Get("User-Agent") != loadgen.DefaultUserAgent || h.Get("Accept") != loadgen.DefaultAccept {
				t.Errorf("request headers %v: want the local target's Host, User-Agent and Accept", h)
			}
			if c.body != "" && (h.Get("Method") != "POST" || h.Get("Content-Type") != "application/json" || bodies[0] != c.body) {
				t.Errorf("POST %q with %v, want the JSON body", bodies[0], h)
			}
		})
	}
}

// Cancelling stops the run on the server instead of letting it load the
// proxy into the next step.
func TestCancelStopsTheServerRun(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer backend.Close()
	server := httptest.NewServer(Handler(t.TempDir()))
	defer server.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Client{BaseURL: server.URL, PollEvery: 50 * time.Millisecond}.Run(ctx, loadgen.Spec{URL: backend.URL, QPS: 10, Connections: 1, Duration: time.Minute})
	if err == nil {
		t.Fatal("a cancelled run returned no error")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("cancellation did not stop the wait")
	}
	resp, err := http.Get(server.URL + "/fortio/rest/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st statusReply
	json.NewDecoder(resp.Body).Decode(&st)
	if len(st.Statuses) != 0 {
		t.Errorf("the server still runs %v", st.Statuses)
	}
}

func TestRequestRejectsBadSpecs(t *testing.T) {
	cases := []loadgen.Spec{
		{URL: "https://x/", QPS: 1, Connections: 1, Duration: time.Second},
		{URL: "http://x/", QPS: 0, Connections: 1, Duration: time.Second},
		{URL: "http://x/", QPS: 1, Connections: 0, Duration: time.Second},
		{URL: "http://x/", QPS: 1, Connections: 1, Duration: time.Second, Body: []byte{0}},
	}
	for _, s := range cases {
		if _, err := Request(s); err == nil {
			t.Errorf("spec %+v accepted", s)
		}
	}
}
