package loadgen

import (
	"bytes"
	"context"
	"encoding/gob"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// serialServer answers one request at a time, each after sleeping for
// serviceTime: its capacity is 1/(the service time it actually took),
// which it measures itself so that sleep overshoot does not blur the
// ground truth.
type serialServer struct {
	*httptest.Server
	serviceTime time.Duration
	mu          sync.Mutex
	busy        time.Duration
	served      int64
	times       []time.Duration
}

func startSerialServer(t *testing.T, serviceTime time.Duration) *serialServer {
	t.Helper()
	s := &serialServer{serviceTime: serviceTime}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		start := time.Now()
		time.Sleep(s.serviceTime)
		took := time.Since(start)
		s.busy += took
		s.served++
		s.times = append(s.times, took)
		s.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	return s
}

// capacity is the measured 1/service time, in requests per second.
func (s *serialServer) capacity() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return float64(s.served) / s.busy.Seconds()
}

func (s *serialServer) meanService() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy / time.Duration(s.served)
}

// medianService is the median of the service times the server measured:
// the latency a client should see at p50 when nothing queues.
func (s *serialServer) medianService() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	times := slices.Clone(s.times)
	slices.Sort(times)
	return times[len(times)/2]
}

func within(got, want, fraction float64) bool { return math.Abs(got-want) <= fraction*want }

func TestWindowBelowCapacityMeasuresTheKnownLatency(t *testing.T) {
	srv := startSerialServer(t, 4*time.Millisecond) // capacity ~250 RPS
	var edges []Edge
	var marked []time.Time
	var mu sync.Mutex
	spec := Spec{URL: srv.URL + "/", QPS: 50, Connections: 4, Warmup: 500 * time.Millisecond, Duration: 3 * time.Second,
		OnEdge: func(e Edge, at time.Time) {
			mu.Lock()
			edges, marked = append(edges, e), append(marked, at)
			mu.Unlock()
		}}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	w := res.Window
	if w == nil {
		t.Fatal("no window")
	}
	if len(edges) != 2 || edges[0] != WindowStart || edges[1] != WindowEnd {
		t.Errorf("OnEdge saw %v, want [start end]", edges)
	}
	if len(marked) != 2 || !marked[0].Equal(w.Start) || !marked[1].Equal(w.End) {
		t.Errorf("OnEdge was told the edges were at %v, the window is %v to %v", marked, w.Start, w.End)
	}
	if !within(w.Seconds(), 3, 0.02) {
		t.Errorf("window lasted %.3f s, want 3", w.Seconds())
	}
	if !within(w.AchievedQPS(), 50, 0.02) || w.Unsent != 0 || w.OK != w.Completed {
		t.Errorf("achieved %.1f RPS (%d completed, %d ok, %d unsent), want 50", w.AchievedQPS(), w.Completed, w.OK, w.Unsent)
	}
	if !within(float64(w.Intended), w.Scheduled, 0.02) {
		t.Errorf("%d slots intended in the window, scheduled %.0f", w.Intended, w.Scheduled)
	}
	// Well below capacity nothing queues: raw latency is the service time
	// plus loopback, and corrected latency adds only the load generator's
	// own lateness (timer wake-ups), which it measures.
	// (Within 5% plus a loopback round trip; make test runs this beside
	// other packages, so the bounds leave the scheduler some room.)
	service := float64(srv.medianService()) / 1e6
	if w.Raw.P50Ms < service*0.95 || w.Raw.P50Ms > service*1.05+0.3 {
		t.Errorf("raw p50 %.3f ms, want the median service time %.3f ms within 5%%", w.Raw.P50Ms, service)
	}
	// Each corrected latency is its raw latency plus its send's lateness;
	// percentiles do not add, but by the union bound the p99 of the sums
	// is at most the sum of the two p99.5s, themselves under the p99.9s.
	// (A busy machine makes the late sends the slow ones too: raw p99 7.4
	// ms plus lateness p99 7.1 ms was exceeded at 15.0 ms.)
	if w.Corrected.P99Ms < w.Raw.P99Ms || w.Corrected.P99Ms > w.Raw.P999Ms+w.Lateness.P999Ms+0.2 {
		t.Errorf("corrected p99 %.3f ms, want raw p99 %.3f ms plus at most the lateness (p99.9s: raw %.3f, lateness %.3f ms)",
			w.Corrected.P99Ms, w.Raw.P99Ms, w.Raw.P999Ms, w.Lateness.P999Ms)
	}
	// The counts outside the window (warm-up and tail) are not in it.
	if res.RunCompleted <= w.Completed || res.Completed != w.Completed || res.P99Ms != w.Corrected.P99Ms {
		t.Errorf("whole run completed %d, window %d, result %d (p99 %v, window's %v): the result is the window's, warm-up and tail add calls to the run",
			res.RunCompleted, w.Completed, res.Completed, res.P99Ms, w.Corrected.P99Ms)
	}
}

func TestWindowAboveCapacityFindsTheCapacityAndTheQueue(t *testing.T) {
	srv := startSerialServer(t, 5*time.Millisecond) // capacity ~200 RPS
	spec := Spec{URL: srv.URL + "/", QPS: 400, Connections: 16, Warmup: 500 * time.Millisecond, Duration: 3 * time.Second}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	w := res.Window
	capacity := srv.capacity()
	if !within(w.AchievedQPS(), capacity, 0.05) {
		t.Errorf("achieved %.1f RPS, want the server's capacity %.1f within 5%%", w.AchievedQPS(), capacity)
	}
	if w.Completed >= int64(0.99*w.Scheduled) {
		t.Errorf("overloaded: %d completed of %.0f scheduled", w.Completed, w.Scheduled)
	}
	// Above capacity the queue grows across the window: every connection
	// falls further behind, so corrected latency at the end approaches
	// the window's length times the overload, (1 - capacity/R) * T, and
	// its median is well beyond what any single call took.
	growth := (1 - capacity/spec.QPS) * spec.Duration.Seconds() * 1000
	if w.Corrected.MaxMs < 0.5*growth || w.Corrected.P50Ms <= w.Raw.P99Ms {
		t.Errorf("corrected p50 %.0f ms, max %.0f ms; raw p99 %.0f ms: want the queue to grow towards %.0f ms",
			w.Corrected.P50Ms, w.Corrected.MaxMs, w.Raw.P99Ms, growth)
	}
	// Most of the calls intended in the window were never answered: the
	// queue left at its end.
	if w.Answered() >= int64(0.99*float64(w.Intended)) {
		t.Errorf("overloaded: %d of the %d calls intended in the window answered", w.Answered(), w.Intended)
	}
}

// Just above capacity the run answers nearly every call intended in the
// window, late, within the tail: only the latency's growth between the
// window's first and last fifth shows that the rate was not sustained.
func TestWindowJustAboveCapacityShowsTheQueueGrowing(t *testing.T) {
	srv := startSerialServer(t, 5*time.Millisecond) // capacity a little under 200 RPS
	spec := Spec{URL: srv.URL + "/", QPS: 215, Connections: 8, Warmup: 500 * time.Millisecond, Duration: 3 * time.Second}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	w := res.Window
	// The queue grows by (R - C) calls a second, each 1/C of waiting:
	// from the first fifth's middle to the last's, 3/5 of the window.
	capacity := srv.capacity()
	growth := (spec.QPS - capacity) / capacity * 0.6 * spec.Duration.Seconds() * 1000
	t.Logf("capacity %.1f RPS; p50 first fifth %.1f ms, last %.1f ms (model: %.0f ms more); answered %d of %d",
		capacity, w.FirstFifth.P50Ms, w.LastFifth.P50Ms, growth, w.Answered(), w.Intended)
	if w.LastFifth.P50Ms-w.FirstFifth.P50Ms < 0.5*growth {
		t.Errorf("p50 of the first fifth %.1f ms, of the last %.1f ms: want the last about %.0f ms higher",
			w.FirstFifth.P50Ms, w.LastFifth.P50Ms, growth)
	}
}

func TestWindowDoesNotCreditTheWarmupBacklog(t *testing.T) {
	// One connection at 10 RPS (a slot every 100 ms) behind a proxy that
	// stalled through the warm-up: the calls intended at 0-400 ms all end
	// inside the window [500, 1000), the window's own slots only after
	// it. By arrival the window looks busier than its schedule (1.2);
	// by intended time it answered its calls late.
	ms := func(v float64) int64 { return int64(v * 1e6) }
	at := func(v float64) time.Time { return time.Unix(0, ms(v)) }
	var calls []call
	for i := range 5 { // the backlog: sent on time, answered at 500-900 ms
		calls = append(calls, call{iter: int64(i), start: ms(100 * float64(i)), end: ms(500 + 100*float64(i)), code: 200})
	}
	calls = append(calls, call{iter: 5, start: ms(900), end: ms(1000), code: 200}) // intended at 500
	for i := 6; i < 10; i++ {                                                      // intended at 600-900
		calls = append(calls, call{iter: int64(i), start: ms(1000 + 10*float64(i)), end: ms(1010 + 10*float64(i)), code: 200})
	}
	rec := &recorder{epoch: time.Unix(0, 0), calls: [][]call{calls}}
	w := rec.window(10, at(500), at(1000), at(1200))
	if w.Completed != 5 || w.Intended != 5 || w.Answered() != 5 {
		t.Errorf("completed %d, intended %d, answered %d: want 5 ended in the window (the backlog), 5 intended and 5 answered",
			w.Completed, w.Intended, w.Answered())
	}
	if w.FirstFifth.P50Ms != 500 || w.LastFifth.P50Ms != 200 {
		t.Errorf("fifths' p50 %v and %v ms, want 500 and 200", w.FirstFifth.P50Ms, w.LastFifth.P50Ms)
	}
}

func TestWindowLengthSurvivesAClockStep(t *testing.T) {
	// A Kubernetes target's window crosses the wire by gob, which keeps
	// the wall clock only; a VM fork once stepped it 12 s during a 2 s
	// window. The length measured where the window was must stand.
	start := time.Now()
	end := start.Add(2 * time.Second) // carries start's monotonic reading
	w := windowOf(start, end, 100)
	var wire bytes.Buffer
	if err := gob.NewEncoder(&wire).Encode(w); err != nil {
		t.Fatal(err)
	}
	var got Window
	if err := gob.NewDecoder(&wire).Decode(&got); err != nil {
		t.Fatal(err)
	}
	got.End = got.End.Add(12 * time.Second) // the step, as the receiver reads the wall clock
	if got.Seconds() != 2 || got.Scheduled != 200 {
		t.Errorf("after a 12 s clock step the window lasts %v s and scheduled %v calls, want 2 s and 200", got.Seconds(), got.Scheduled)
	}
	var r Result
	r.useWindow(got)
	if r.Duration != 2*time.Second || r.ActualQPS != 0 {
		t.Errorf("the result's duration is %v (rate %v), want the window's 2s", r.Duration, r.ActualQPS)
	}
}

func TestWindowCountsFromTheCallsTimestamps(t *testing.T) {
	// Two connections at 10 RPS: interval 200 ms per connection, the
	// second connection 100 ms after the first. Window [150, 1000) ms,
	// run stopped at 1300 ms.
	ms := func(v float64) int64 { return int64(v * 1e6) }
	at := func(v float64) time.Time { return time.Unix(0, ms(v)) }
	rec := &recorder{epoch: time.Unix(0, 0), calls: [][]call{
		{
			{iter: 0, start: ms(0), end: ms(10), code: 200},
			{iter: 1, start: ms(200), end: ms(650), code: 200}, // overran the slots at 400 and 600
			{iter: 2, start: ms(650), end: ms(700), code: 200}, // caught up: 250 ms late
			{iter: 3, start: ms(700), end: ms(720), code: 503}, // 100 ms late
			{iter: 4, start: ms(800), end: ms(810), code: 200}, // on time again
		},
		{
			{iter: 0, start: ms(100), end: ms(105), code: 200},
			{iter: 1, start: ms(300), end: ms(302), code: -1},
			{iter: 2, start: ms(500), end: ms(1200), code: 200}, // ends after the window
			// the slots at 700 and 900 were never sent
		},
	}}
	w := rec.window(10, at(150), at(1000), at(1300))
	if w.Completed != 5 || w.OK != 3 || w.Non2xx != 1 || w.SocketErrors != 1 {
		t.Errorf("completed %d (ok %d, non-2xx %d, socket %d), want 5 (3, 1, 1)", w.Completed, w.OK, w.Non2xx, w.SocketErrors)
	}
	if w.Intended != 8 || w.Unsent != 2 || w.Answered() != 6 || w.Scheduled != 8.5 || w.Length != 850*time.Millisecond {
		t.Errorf("intended %d, unsent %d, answered %d, scheduled %v, length %v; want 8, 2, 6, 8.5, 850ms",
			w.Intended, w.Unsent, w.Answered(), w.Scheduled, w.Length)
	}
	tests := []struct {
		name              string
		got               Latency
		samples           int64
		p50, maxMs        float64
		whatTheSamplesAre string
	}{
		{"raw", w.Raw, 6, 20, 700, "450 50 20 10 2 700"},
		{"corrected", w.Corrected, 8, 300, 700, "450 300 120 10 2 700, unsent 600 400 (until the stop)"},
		// Late sends on a busy connection are the proxy's; only those on
		// a free one count: 0 0 0 0 (the call at 650 and 700 waited).
		{"lateness", w.Lateness, 4, 0, 0, "0 0 0 0"},
		// Fifths of 170 ms: [150, 320) and [830, 1000).
		{"first fifth", w.FirstFifth, 2, 2, 450, "450 (intended at 200) 2 (at 300)"},
		{"last fifth", w.LastFifth, 1, 400, 400, "unsent 400 (at 900)"},
	}
	for _, tc := range tests {
		if tc.got.Samples != tc.samples || tc.got.P50Ms != tc.p50 || tc.got.MaxMs != tc.maxMs {
			t.Errorf("%s: %d samples, p50 %v, max %v; want %d, %v, %v (%s)",
				tc.name, tc.got.Samples, tc.got.P50Ms, tc.got.MaxMs, tc.samples, tc.p50, tc.maxMs, tc.whatTheSamplesAre)
		}
	}
}
