package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

func fullCRSConfig(t *testing.T, offWorker string) string {
	return `{"off_worker":` + offWorker + `,"directives":[` + tierDirectives(t, "full-crs") + `]}`
}

func shapeBody(t *testing.T, name string) string {
	t.Helper()
	shape, err := plan.ShapeByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(shape.Body)
}

// Large bodies are inspected on a pool thread and the stream resumes through
// Envoy's scheduler: verdicts and forwarded bodies are what inspection in
// place gives.
func TestLargeBodiesAreInspectedOffTheWorker(t *testing.T) {
	p := startProxy(t, proxyOptions{config: fullCRSConfig(t, `{"min_body_bytes":8192}`)})
	benign := shapeBody(t, plan.ShapeJSON10K)
	attack := strings.Replace(benign, `"note":"`, `"note":"1' UNION SELECT password FROM users-- `, 1)
	if attack == benign {
		t.Fatal("the 10 KB body has no note field to put the attack in")
	}
	tests := []struct {
		name       string
		body       string
		wantStatus int
		offWorker  bool
	}{
		{"benign 10 KB body", benign, 200, true},
		{"attack in a 10 KB body", attack, 403, true},
		{"benign 1 KB body, in place", shapeBody(t, plan.ShapeJSON1K), 200, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := p.stats(t)["corazawaf.off_worker_inspections.placement.pool"]
			resp := p.do(t, request{path: "/api/orders", body: tt.body, contentType: "application/json"})
			if resp.status != tt.wantStatus {
				t.Fatalf("status %d, want %d\n%s", resp.status, tt.wantStatus, p.logTail())
			}
			eventually(t, "the off-worker counter", func() bool {
				n := p.stats(t)["corazawaf.off_worker_inspections.placement.pool"] - before
				return (n == 1) == tt.offWorker
			})
			if tt.wantStatus != 200 {
				return
			}
			recent := p.backend.Recent()
			got := recent[len(recent)-1]
			sum := sha256.Sum256([]byte(tt.body))
			if got.BodyBytes != int64(len(tt.body)) || got.BodySHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("backend got %d bytes (%s), want the %d sent", got.BodyBytes, got.BodySHA256, len(tt.body))
			}
		})
	}
}

// With one worker, a GET sent while a 50 KB full-CRS body is being
// inspected is answered before that inspection ends only when the
// inspection runs off the worker. Inspection in place is the control: it
// shows the test can tell the two apart.
func TestInspectionOffTheWorkerDoesNotStallOtherStreams(t *testing.T) {
	body := shapeBody(t, plan.ShapeJSON50K)
	for _, tt := range []struct {
		offWorker string
		wantStall bool
	}{
		{`{"enabled":true}`, false},
		{`{"enabled":false}`, true},
	} {
		t.Run("off_worker "+tt.offWorker, func(t *testing.T) {
			p := startProxy(t, proxyOptions{config: fullCRSConfig(t, tt.offWorker), workers: 1})
			p.do(t, request{path: "/warm"})
			var (
				wg         sync.WaitGroup
				postStatus int
				postTime   time.Duration
			)
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				resp, err := p.send(request{path: "/api/orders", body: body, contentType: "application/json"})
				postTime = time.Since(start)
				if postStatus = resp.status; err != nil {
					postStatus = -1
				}
			}()
			time.Sleep(100 * time.Millisecond) // the body is sent and being inspected
			start := time.Now()
			if resp := p.do(t, request{path: "/health"}); resp.status != 200 {
				t.Fatalf("GET during the inspection: %d", resp.status)
			}
			getTime := time.Since(start)
			wg.Wait()
			if postStatus != 200 {
				t.Fatalf("50 KB POST: status %d\n%s", postStatus, p.logTail())
			}
			// The inspection takes hundreds of milliseconds; a GET that
			// waits for it takes at least the part left after the 100 ms
			// head start, one that does not takes a few milliseconds.
			stalled := getTime > (postTime-100*time.Millisecond)/2
			t.Logf("POST %v, GET sent 100 ms into it %v", postTime.Round(time.Millisecond), getTime.Round(time.Millisecond))
			if postTime < 300*time.Millisecond {
				t.Skipf("the 50 KB inspection took only %v: too fast here to tell a stall", postTime)
			}
			if stalled != tt.wantStall {
				t.Fatalf("GET stalled = %v, want %v (POST %v, GET %v)", stalled, tt.wantStall, postTime, getTime)
			}
		})
	}
}

// A client that goes away while its body is inspected off the worker
// leaves the inspection to finish on its own: Envoy keeps serving, nothing
// panics, and the transactions are closed (the goroutine count settles).
func TestClientGoneDuringInspectionOffTheWorker(t *testing.T) {
	p := startProxy(t, proxyOptions{config: fullCRSConfig(t, `{"enabled":true}`)})
	body := shapeBody(t, plan.ShapeJSON50K)
	dropBodies(t, p, body, 6)
	before := p.backend.Stats().Requests
	for range 3 {
		if resp := p.do(t, request{path: "/api/orders", body: body, contentType: "application/json"}); resp.status != 200 {
			t.Fatalf("after abandoned inspections: status %d\n%s", resp.status, p.logTail())
		}
	}
	if got := p.backend.Stats().Requests - before; got != 3 {
		t.Fatalf("backend got %d requests after the abandoned ones, want the 3 completed", got)
	}
	if log := p.log(t); strings.Contains(log, "panic") {
		t.Fatalf("a panic was logged:\n%s", p.logTail())
	}
	if p.envoy.Exited() {
		t.Fatal("Envoy exited")
	}
}

// Inspections still queued when their client goes away are skipped: with
// one inspection thread busy on the first body, the bodies dropped behind
// it are never inspected, and Envoy keeps serving.
func TestQueuedInspectionOfAGoneClientIsSkipped(t *testing.T) {
	p := startProxy(t, proxyOptions{config: fullCRSConfig(t, `{"threads":1}`), logLevel: "debug"})
	body := shapeBody(t, plan.ShapeJSON50K)
	dropBodies(t, p, body, 6)
	eventually(t, "a skipped inspection logged", func() bool {
		return strings.Contains(p.log(t), "queued inspection skipped")
	})
	if resp := p.do(t, request{path: "/api/orders", body: body, contentType: "application/json"}); resp.status != 200 {
		t.Fatalf("after skipped inspections: status %d", resp.status)
	}
	t.Logf("%d of 6 dropped inspections skipped", strings.Count(p.log(t), "queued inspection skipped"))
}

// dropBodies sends n POSTs of body on fresh connections and closes each
// 20 ms later, while its inspection runs or waits off the worker.
func dropBodies(t *testing.T, p *proxy, body string, n int) {
	t.Helper()
	for range n {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.port))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /api/orders HTTP/1.1\r\nHost: shop.wafsweep.test\r\nUser-Agent: wafsweep-e2e/1.0\r\n"+
			"Accept: */*\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		time.Sleep(20 * time.Millisecond)
		conn.Close() // the client is gone mid-inspection
	}
}
