package waf

import (
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// BenchmarkColdCaches measures a full-CRS GET through the glue with the
// processor's caches as a busy host leaves them between two requests:
// before each request (off the clock) it walks a buffer larger than the
// last-level cache. Beside BenchmarkGlue (back to back, caches warm) it
// says how much of a request's cost at low rates, where other work runs
// between requests, is the rule set's working set fetched from memory
// again.
//
//	go test -run '^$' -bench 'ColdCaches|Glue/tier=full-crs/shape=get' -benchtime 300x ./filter/waf
func BenchmarkColdCaches(b *testing.B) {
	cfg := tierConfig(b, "full-crs")
	e := mustEngine(b, cfg)
	shape, err := plan.ShapeByName(plan.ShapeGet)
	if err != nil {
		b.Fatal(err)
	}
	req := shapeRequest(shape)
	evict := make([]byte, evictBytes)
	request := func() {
		s := NewStream(&cfg, e, nil)
		if d := sendRequest(s, req, nil, benchFrame); d.Action == Reply {
			b.Fatalf("benign GET blocked by rule %d", d.Reply.Verdict.RuleID)
		}
		s.OnResponseHeaders(200, []Header{{"content-type", "text/plain"}, {"content-length", "3"}}, true)
		s.Complete()
	}
	for _, warm := range []bool{true, false} {
		name := "caches=cold"
		if warm {
			name = "caches=warm"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !warm {
					b.StopTimer()
					touch(evict)
					b.StartTimer()
				}
				request()
			}
		})
	}
}

// evictBytes is larger than the last-level cache of the machines here
// (32 MB of L3 per CCX on the EPYCs, less on the Xeons).
const evictBytes = 96 << 20

// touch writes one byte of every cache line of buf.
func touch(buf []byte) {
	for i := 0; i < len(buf); i += 64 {
		buf[i]++
	}
}
