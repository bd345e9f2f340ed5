package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"fortio.org/log"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
)

func startBackend(t *testing.T) *backend.Server {
	t.Helper()
	s, err := backend.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestRunAtSteadyRate(t *testing.T) {
	be := startBackend(t)
	spec := Spec{URL: be.URL() + "/steady", QPS: 200, Connections: 4, Duration: 2 * time.Second}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	checkScheduled(t, res, spec.QPS, spec.Duration)
	if res.CompletionRatio() < 0.99 {
		t.Errorf("completed %d of %d scheduled", res.Completed, res.Scheduled)
	}
	if res.SocketErrors != 0 || res.Non2xx != 0 || res.Codes[http.StatusOK] != res.RunCompleted {
		t.Errorf("errors: socket %d non-2xx %d codes %v", res.SocketErrors, res.Non2xx, res.Codes)
	}
	if res.SocketsOpened != 4 {
		t.Errorf("opened %d sockets, want 4 (one keep-alive connection each)", res.SocketsOpened)
	}
	if !(res.P50Ms > 0 && res.P50Ms <= res.P90Ms && res.P90Ms <= res.P99Ms && res.P99Ms <= res.P999Ms && res.MaxMs > 0) {
		t.Errorf("latencies not ordered: p50 %v p90 %v p99 %v p99.9 %v max %v", res.P50Ms, res.P90Ms, res.P99Ms, res.P999Ms, res.MaxMs)
	}
	if res.ActualQPS < 190 || res.ActualQPS > 210 || res.Duration < 1900*time.Millisecond {
		t.Errorf("actual %v QPS over %v", res.ActualQPS, res.Duration)
	}
	if res.LoadgenCPUSeconds <= 0 {
		t.Errorf("LoadgenCPUSeconds %v", res.LoadgenCPUSeconds)
	}
	// Fortio warms each connection up with one uncounted request.
	if got, want := be.Stats().Requests, res.RunCompleted+int64(spec.Connections); got != want {
		t.Errorf("backend saw %d requests, want %d", got, want)
	}
	rec := be.Recent()[0]
	if rec.Host != DefaultHost || rec.Header.Get("User-Agent") != DefaultUserAgent || rec.Header.Get("Accept") != DefaultAccept {
		t.Errorf("request had Host %q headers %v", rec.Host, rec.Header)
	}
}

// checkScheduled checks that a result's Scheduled count is its rate times
// its measured window, and that the window is the one asked for. The
// window's edges are the moments its timers fired, each set for its own
// moment, so on a busy machine the window can run a few milliseconds long
// or short and schedule a call more or fewer than qps*d.
func checkScheduled(t *testing.T, r Result, qps float64, d time.Duration) {
	t.Helper()
	if r.Window == nil {
		t.Fatal("no window")
	}
	if want := int64(math.Round(qps * r.Window.Seconds())); r.Scheduled != want {
		t.Errorf("Scheduled %d, want %d (%v QPS over a %v window)", r.Scheduled, want, qps, r.Window.End.Sub(r.Window.Start))
	}
	if got := r.Window.End.Sub(r.Window.Start); got < d-maxEdgeLateness || got > d+maxEdgeLateness {
		t.Errorf("window lasted %v, want %v ± %v", got, d, maxEdgeLateness)
	}
}

// maxEdgeLateness bounds how late a window edge's timer may fire on a
// loaded 2-core test machine.
const maxEdgeLateness = 100 * time.Millisecond

func TestRunPostsTheBody(t *testing.T) {
	be := startBackend(t)
	body := bytes.Repeat([]byte("a"), 1000)
	spec := Spec{URL: be.URL() + "/post", ContentType: "application/json", Body: body,
		Headers: map[string]string{"x-extra": "1"}, QPS: 50, Connections: 2, Duration: 500 * time.Millisecond}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed == 0 || res.Non2xx != 0 {
		t.Fatalf("completed %d, non-2xx %d", res.Completed, res.Non2xx)
	}
	for _, rec := range be.Recent() {
		if rec.Method != http.MethodPost || rec.BodyBytes != int64(len(body)) ||
			rec.Header.Get("Content-Type") != "application/json" || rec.Header.Get("X-Extra") != "1" {
			t.Fatalf("backend got %s with %d body bytes, headers %v", rec.Method, rec.BodyBytes, rec.Header)
		}
	}
	var raw map[string]any
	if err := json.Unmarshal(res.RawJSON, &raw); err != nil {
		t.Fatalf("RawJSON: %v", err)
	}
	if _, ok := raw["Payload"]; ok {
		t.Error("RawJSON still holds the payload")
	}
	if raw["URL"] != spec.URL {
		t.Errorf("RawJSON URL %v", raw["URL"])
	}
}

func TestRunCountsNon2xxAndReconnects(t *testing.T) {
	forbid := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "blocked", http.StatusForbidden)
	}))
	defer forbid.Close()
	res, err := Run(context.Background(), Spec{URL: forbid.URL, QPS: 40, Connections: 2, Duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// Codes counts the whole run (Fortio's), the counts the window.
	if res.Completed == 0 || res.Non2xx != res.Completed || res.Codes[http.StatusForbidden] != res.RunCompleted || res.ErrorRatio() != 1 {
		t.Errorf("completed %d non-2xx %d codes %v", res.Completed, res.Non2xx, res.Codes)
	}
	// Fortio's fast client closes the connection after a non-2xx answer.
	if res.SocketsOpened <= 2 {
		t.Errorf("opened %d sockets, want reconnects", res.SocketsOpened)
	}
}

func TestRunFailsFastOnDeadTarget(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	began := time.Now()
	_, err = Run(context.Background(), Spec{URL: "http://" + dead + "/", QPS: 100, Connections: 2, Duration: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("err = %v, want an unreachable target", err)
	}
	if elapsed := time.Since(began); elapsed > 3*time.Second {
		t.Errorf("took %v to fail", elapsed)
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	be := startBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	res, err := Run(ctx, Spec{URL: be.URL(), QPS: 100, Connections: 2, Duration: 10 * time.Second})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's", err)
	}
	if elapsed := time.Since(began); elapsed > 3*time.Second {
		t.Errorf("ran %v after cancellation at 300ms", elapsed)
	}
	if res.Completed == 0 || res.Completed >= res.Scheduled {
		t.Errorf("partial result completed %d of %d", res.Completed, res.Scheduled)
	}
}

func TestFortioLoggingIsQuiet(t *testing.T) {
	be := startBackend(t)
	var logged bytes.Buffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr) // the default; also resets the standard logger it forwards to
	if _, err := Run(context.Background(), Spec{URL: be.URL(), QPS: 20, Connections: 1, Duration: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if log.GetLogLevel() != log.Warning {
		t.Errorf("fortio log level %v, want warning", log.GetLogLevel())
	}
	if strings.Contains(logged.String(), "Starting http test") {
		t.Errorf("fortio logged at info level:\n%s", logged.String())
	}
}

func TestProbe(t *testing.T) {
	be := startBackend(t)
	tests := []struct {
		name      string
		spec      Spec
		wantBody  string
		wantBytes string
	}{
		{"get", Spec{URL: be.URL() + "/"}, "ok\n", "0"},
		{"post", Spec{URL: be.URL() + "/", Body: []byte("hello")}, "ok\n", "5"},
		{"echo", Spec{URL: be.URL() + "/?reply_ct=application/json", Method: http.MethodPut, ContentType: "application/json", Body: []byte(`{"a":1}`)}, `{"a":1}`, "7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, headers, err := Probe(context.Background(), tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if status != http.StatusOK || string(body) != tt.wantBody || headers.Get(backend.HeaderBodyBytes) != tt.wantBytes {
				t.Errorf("status %d body %q body bytes %s", status, body, headers.Get(backend.HeaderBodyBytes))
			}
			rec := be.Recent()[len(be.Recent())-1]
			wantMethod := tt.spec.Method
			if wantMethod == "" {
				wantMethod = map[bool]string{true: http.MethodPost, false: http.MethodGet}[len(tt.spec.Body) > 0]
			}
			if rec.Host != DefaultHost || rec.Method != wantMethod {
				t.Errorf("backend saw %s with Host %q", rec.Method, rec.Host)
			}
		})
	}
	if _, _, _, err := Probe(context.Background(), Spec{URL: "http://127.0.0.1:1/"}); err == nil {
		t.Error("probe of a closed port succeeded")
	}
}

func TestScheduledCalls(t *testing.T) {
	tests := []struct {
		qps  float64
		d    time.Duration
		c    int
		want int64
	}{
		{200, 2 * time.Second, 4, 400},
		{100, time.Second, 3, 99},
		{10.5, time.Second, 4, 8},
		{1000, 1500 * time.Millisecond, 64, 1472},
		{100, time.Second, 0, 0},
	}
	for _, tt := range tests {
		if got := ScheduledCalls(tt.qps, tt.d, tt.c); got != tt.want {
			t.Errorf("ScheduledCalls(%v, %v, %d) = %d, want %d", tt.qps, tt.d, tt.c, got, tt.want)
		}
	}
}

func TestSpecValidation(t *testing.T) {
	valid := Spec{URL: "http://127.0.0.1:8080/", QPS: 100, Connections: 2, Duration: time.Second}
	tests := []struct {
		name    string
		modify  func(*Spec)
		wantErr string
	}{
		{"valid", func(*Spec) {}, ""},
		{"named host with port", func(s *Spec) { s.Host = "example.test:8080" }, ""},
		{"numeric host", func(s *Spec) { s.Host = "127.0.0.1" }, "920350"},
		{"numeric IPv6 host", func(s *Spec) { s.Host = "[::1]:80" }, "numeric"},
		{"https without a CA", func(s *Spec) { s.URL = "https://127.0.0.1/" }, "name the CA"},
		{"a CA in clear", func(s *Spec) { s.CAFile = "/tmp/ca.pem" }, "use https://"},
		{"another scheme", func(s *Spec) { s.URL = "ftp://127.0.0.1/" }, "must be http://"},
		{"https with a CA", func(s *Spec) { s.URL, s.CAFile = "https://127.0.0.1/", "/tmp/ca.pem" }, ""},
		{"no scheme", func(s *Spec) { s.URL = "127.0.0.1/x" }, "must be http://"},
		{"unparsable URL", func(s *Spec) { s.URL = "http://[::1" }, "URL"},
		{"zero qps", func(s *Spec) { s.QPS = 0 }, "QPS 0"},
		{"no connections", func(s *Spec) { s.Connections = 0 }, "Connections 0"},
		{"no duration", func(s *Spec) { s.Duration = 0 }, "Duration 0s"},
		{"too few calls", func(s *Spec) { s.QPS, s.Connections = 10, 8 }, "less than 2 per connection"},
		{"host header", func(s *Spec) { s.Headers = map[string]string{"host": "x"} }, "Spec.Host"},
		{"content-type header", func(s *Spec) { s.Headers = map[string]string{"Content-Type": "x"} }, "Spec.ContentType"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := valid
			tt.modify(&s)
			_, err := s.normalized()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if _, runErr := Run(context.Background(), s); runErr == nil || !strings.Contains(runErr.Error(), "invalid spec") {
				t.Errorf("Run err = %v, want the validation error", runErr)
			}
		})
	}
}

func TestSpecDefaults(t *testing.T) {
	tests := []struct {
		spec       Spec
		wantMethod string
		wantUA     string
	}{
		{Spec{}, http.MethodGet, DefaultUserAgent},
		{Spec{Body: []byte("x")}, http.MethodPost, DefaultUserAgent},
		{Spec{Method: http.MethodPut, Headers: map[string]string{"user-agent": "custom"}}, http.MethodPut, "custom"},
	}
	for i, tt := range tests {
		got, _ := tt.spec.normalized() // only defaults matter here
		if got.Method != tt.wantMethod || got.Headers["User-Agent"] != tt.wantUA || got.Host != DefaultHost || got.RequestTimeout != DefaultRequestTimeout {
			t.Errorf("case %d: %+v", i, got)
		}
	}
	if got := fmt.Sprint(Spec{}.Headers); got != "map[]" {
		t.Errorf("normalized modified the caller's spec: %s", got)
	}
}

// TestWarmUpDoesNotBurst checks that the connections' first requests are
// not sent all at once: a slow server sees at most a couple of requests in
// flight at a rate far below its capacity (one request per 31 ms), warm-up included.
func TestWarmUpDoesNotBurst(t *testing.T) {
	var inFlight, most atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(10 * time.Millisecond)
	}))
	defer srv.Close()
	spec := Spec{URL: srv.URL + "/slow", QPS: 32, Connections: 16, Duration: time.Second}
	if _, err := Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if m := most.Load(); m > 2 {
		t.Errorf("%d requests in flight at once at 32 RPS of 10 ms requests: the warm-up burst is back", m)
	}
}

// The load generator's CPU is the window's, not the run's: over a run of
// 2 s of warm-up, a 1 s window and the 1 s tail at a steady rate, the
// window holds about a quarter of what the process spent (the backend,
// in-process here, included in both).
func TestLoadgenCPUIsTheWindows(t *testing.T) {
	be := startBackend(t)
	spec := Spec{URL: be.URL() + "/cpu", QPS: 2000, Connections: 8, Warmup: 2 * time.Second, Duration: time.Second}
	before, err := processCPUSeconds()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	after, err := processCPUSeconds()
	if err != nil {
		t.Fatal(err)
	}
	run := after - before
	if !(res.LoadgenCPUSeconds > 0) || res.LoadgenCPUSeconds > 0.5*run {
		t.Errorf("window CPU %.3f s of the run's %.3f s: want about a quarter", res.LoadgenCPUSeconds, run)
	}
}
