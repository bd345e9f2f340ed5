package waf

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/corazawaf/coraza/v3/types"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// The benchmarks measure CPU per request for each tier x shape, twice: the
// Coraza engine driven directly (the floor any connector pays), and through
// our glue (Stream), so the glue's own cost is the difference. Body frames
// are 16 KiB, as Envoy delivers large bodies.
//
//	go test -run '^$' -bench . -benchmem ./filter/waf
var benchTiers = []string{"headers-only", "targeted", "full-crs"}

const benchFrame = 16 << 10

func BenchmarkEngine(b *testing.B) {
	forEachTierShape(b, func(b *testing.B, cfg Config, e *Engine, shape plan.Shape) {
		req := shapeRequest(shape)
		for b.Loop() {
			tx := e.newTransaction()
			drive(tx, req, shape.Body)
			tx.ProcessLogging()
			tx.Close()
		}
	})
}

func BenchmarkGlue(b *testing.B) {
	forEachTierShape(b, func(b *testing.B, cfg Config, e *Engine, shape plan.Shape) {
		req := shapeRequest(shape)
		for b.Loop() {
			s := NewStream(&cfg, e, nil)
			if d := sendRequest(s, req, shape.Body, benchFrame); d.Action == Reply {
				b.Fatalf("benign %s request blocked by rule %d", shape.Name, d.Reply.Verdict.RuleID)
			}
			s.OnResponseHeaders(200, []Header{{"content-type", "text/plain"}, {"content-length", "3"}}, true)
			s.Complete()
		}
	})
}

func forEachTierShape(b *testing.B, bench func(*testing.B, Config, *Engine, plan.Shape)) {
	for _, tier := range benchTiers {
		cfg := tierConfig(b, tier)
		e := mustEngine(b, cfg)
		for _, name := range plan.Shapes() {
			shape, err := plan.ShapeByName(name)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("tier=%s/shape=%s/fields=%d", tier, name, shape.Fields), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(shape.Body)))
				bench(b, cfg, e, shape)
			})
		}
	}
}

func shapeRequest(shape plan.Shape) RequestHead {
	req := get("/api/orders")
	req.Method = shape.Method
	if len(shape.Body) > 0 {
		req.EndOfStream = false
		req.Headers = append(req.Headers, Header{"content-type", shape.ContentType},
			Header{"content-length", strconv.Itoa(len(shape.Body))})
	}
	return req
}

// drive runs a request through a transaction the way any Coraza connector
// must, without our glue.
func drive(tx types.Transaction, req RequestHead, body []byte) {
	driveWith(tx, req, body, plainResponse)
}

// response is what the upstream answers a driven request with.
type response struct {
	status  int
	headers []Header
}

var plainResponse = response{200, []Header{{"content-type", "text/plain"}}}

// driveWith is drive with a given response; a request without Authority
// has no Host header.
func driveWith(tx types.Transaction, req RequestHead, body []byte, resp response) {
	tx.ProcessConnection(req.Conn.ClientIP, req.Conn.ClientPort, req.Conn.ServerIP, req.Conn.ServerPort)
	tx.ProcessURI(req.Path, req.Method, "HTTP/1.1")
	for _, h := range req.Headers {
		tx.AddRequestHeader(h.Name, h.Value)
	}
	if req.Authority != "" {
		tx.AddRequestHeader("Host", req.Authority)
	}
	tx.ProcessRequestHeaders()
	for off := 0; off < len(body); off += benchFrame {
		tx.WriteRequestBody(body[off:min(off+benchFrame, len(body))])
	}
	tx.ProcessRequestBody()
	for _, h := range resp.headers {
		tx.AddResponseHeader(h.Name, h.Value)
	}
	tx.ProcessResponseHeaders(resp.status, "HTTP/1.1")
	tx.ProcessResponseBody()
}
