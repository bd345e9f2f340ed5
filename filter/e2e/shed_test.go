package e2e

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/filter/waf"
	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

const (
	shedBodyBudget = "corazawaf.shed.reason." + waf.ShedBodyBudget
	shedQueueFull  = "corazawaf.shed.reason." + waf.ShedQueueFull
)

// reachedBackend reports whether the backend recorded a request for path.
func (p *proxy) reachedBackend(path string) bool {
	for _, r := range p.backend.Recent() {
		if r.Path == path {
			return true
		}
	}
	return false
}

// A body held for inspection counts against the filter's body_budget_bytes
// until its stream ends: with one 700 KB body held open, another body that
// would take the total past the 1 MiB budget is answered 503, counted, and
// never reaches the backend; once the held stream ends, the budget is free.
func TestBodyBudgetShedsBodiesOverIt(t *testing.T) {
	p := startProxy(t, proxyOptions{config: `{"body_budget_bytes":1048576,"directives":[` + tierDirectives(t, "targeted") + `]}`})
	const heldBytes, restBytes = 700_000, 100_000

	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.port))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /held HTTP/1.1\r\nHost: shop.wafsweep.test\r\nUser-Agent: wafsweep-e2e/1.0\r\nAccept: */*\r\n"+
		"Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", heldBytes+restBytes, strings.Repeat("h", heldBytes))

	// Until the held body has reached the filter, a probe could take the
	// budget first and the held stream would be the one shed. Envoy counts
	// the bytes it read before its worker hands them to the filter, in the
	// same event.
	rx := "http." + envoyconfig.HTTPStatPrefix + ".downstream_cx_rx_bytes_total"
	eventually(t, "Envoy to read the held body", func() bool { return p.stats(t)[rx] >= heldBytes })
	time.Sleep(100 * time.Millisecond)

	// Probes of 400 KB fit beside nothing but not beside the held body:
	// the first 503 shows the held body has reached the filter.
	probe := strings.Repeat("p", 400_000)
	var shedPath string
	for i := 0; shedPath == "" && i < 100; i++ {
		path := fmt.Sprintf("/probe-%d", i)
		switch resp := p.do(t, request{path: path, body: probe, contentType: "text/plain"}); resp.status {
		case 503:
			shedPath = path
		case 200:
			time.Sleep(50 * time.Millisecond)
		default:
			t.Fatalf("probe %s: status %d", path, resp.status)
		}
	}
	if shedPath == "" {
		t.Fatalf("no probe was shed while a 700 KB body was held against a 1 MiB budget\n%s", p.logTail())
	}
	if p.reachedBackend(shedPath) {
		t.Fatalf("the shed request %s reached the backend", shedPath)
	}
	eventually(t, "the shed counter", func() bool { return p.stats(t)[shedBodyBudget] >= 1 })

	// The held stream ends whole and reaches the backend; then its bytes
	// are free again.
	fmt.Fprint(conn, strings.Repeat("h", restBytes))
	buf := make([]byte, 64)
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := conn.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
		t.Fatalf("the held request: %q, %v", buf[:n], err)
	}
	conn.Close()
	recent := p.backend.Recent()
	var held int64 = -1
	for _, r := range recent {
		if r.Path == "/held" {
			held = r.BodyBytes
		}
	}
	if held != heldBytes+restBytes {
		t.Fatalf("the backend got %d bytes of the held body, want %d", held, heldBytes+restBytes)
	}
	eventually(t, "the budget to be free", func() bool {
		return p.do(t, request{path: "/after", body: probe, contentType: "text/plain"}).status == 200
	})
}

// A flood of expensive bodies with one inspection thread and a queue of
// one: the bodies that find the queue full get the failure mode's answer
// (503 here) instead of an inspection on Envoy's worker, and GETs on that
// one worker stay fast throughout, while the flood also resets its streams.
// (Inspected in place, each 50 KB full-CRS body would hold the worker for
// hundreds of milliseconds: TestInspectionOffTheWorkerDoesNotStallOtherStreams.)
func TestFullInspectionQueueShedsWithoutStallingTheWorker(t *testing.T) {
	p := startProxy(t, proxyOptions{workers: 1, config: `{"failure_status":503,"off_worker":{"threads":1,"queue_length":1},` +
		`"directives":[` + tierDirectives(t, "full-crs") + `]}`})
	body := shapeBody(t, plan.ShapeJSON50K)
	p.do(t, request{path: "/warm"})

	stopGETs := make(chan struct{})
	gets := make(chan time.Duration, 1000)
	go func() {
		defer close(gets)
		for {
			select {
			case <-stopGETs:
				return
			case <-time.After(20 * time.Millisecond):
			}
			start := time.Now()
			if resp, err := p.send(request{path: "/health"}); err == nil && resp.status == 200 {
				gets <- time.Since(start)
			} else {
				gets <- -1
			}
		}
	}()

	// Six bodies at once, each waiting for its answer: one is inspected,
	// one waits in the queue, the others are shed.
	const flood = 6
	statuses := make([]int, flood)
	var wg sync.WaitGroup
	// GETs reach the backend throughout, with no body: the body bytes it
	// counts are the flood's own.
	bodyBytesBefore := p.backend.Stats().BodyBytes
	start := time.Now()
	for i := range flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := p.send(request{path: fmt.Sprintf("/flood-%d", i), body: body, contentType: "application/json"})
			if err != nil {
				statuses[i] = -1
				return
			}
			statuses[i] = resp.status
		}()
	}
	wg.Wait()
	floodTime := time.Since(start)
	floodBodyBytes := p.backend.Stats().BodyBytes - bodyBytesBefore
	// Then the same bodies, reset 20 ms after they are sent.
	dropBodies(t, p, body, 12)
	close(stopGETs)

	shed, passed := 0, 0
	for i, status := range statuses {
		switch status {
		case 503:
			shed++
		case 200:
			passed++
		default:
			t.Errorf("/flood-%d: status %d", i, status)
		}
	}
	// The inspected bodies reached the backend whole, the shed ones not at
	// all.
	if want := int64(passed * len(body)); floodBodyBytes != want {
		t.Errorf("the backend got %d body bytes from the flood, want %d: the %d bodies answered 200, whole, and none of the %d shed",
			floodBodyBytes, want, passed, shed)
	}
	if shed < 2 {
		t.Errorf("%d of %d bodies shed (statuses %v), want at least 2: one thread and a queue of one hold two", shed, flood, statuses)
	}
	eventually(t, "the shed counter", func() bool { return p.stats(t)[shedQueueFull] >= uint64(shed) })

	var worst time.Duration
	n := 0
	for d := range gets {
		if d < 0 {
			t.Fatal("a GET during the flood failed")
		}
		worst, n = max(worst, d), n+1
	}
	t.Logf("flood of %d answered in %v (statuses %v); %d GETs during the floods, the slowest %v",
		flood, floodTime.Round(time.Millisecond), statuses, n, worst.Round(time.Millisecond))
	if floodTime < 300*time.Millisecond {
		t.Skipf("the inspected body took only %v: too fast here to tell a stall", floodTime)
	}
	// One inspection in place would hold the worker for most of floodTime.
	if bound := floodTime / 3; worst > bound {
		t.Fatalf("the slowest GET took %v, more than a third of one inspection (%v): the worker stalled", worst, bound)
	}
}
