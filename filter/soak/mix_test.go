package soak

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// share is one benign shape's part of the mix, by rate, and the most
// keep-alive connections it gets.
type share struct {
	shape    string
	fraction float64
	maxConns int
}

// benignMix is what the soak sends: mostly small reads, some order posts,
// a few large ones. The fractions sum to 1.
//
// Few connections, on purpose: each is at most one stream in flight, and a
// json_10k stream in flight holds several MB of the module's Go heap until
// it completes. With 28 connections a moment of contention on a shared
// machine lets tens pile up and the live heap swing between 65 and 270 MB
// (RSS 200-620 MB), which buries any trend; with 10 it stayed within
// 53-75 MB (RSS 200-236 MB). Ten still keep both workers busy at the knee.
var benignMix = []share{
	{plan.ShapeGet, 0.6, 4},
	{plan.ShapeJSON1K, 0.3, 3},
	{plan.ShapeJSON10K, 0.1, 3},
}

// benignPath is where the benign traffic goes, the order API the shapes'
// bodies belong to.
const benignPath = "/api/orders"

// requestTimeout is generous: the soak checks answers, not latency, and a
// shared 2-core machine can stall a request for a moment.
const requestTimeout = 10 * time.Second

// mixSpecs splits a total rate over a mix: one Fortio run per shape, all
// running at once for d.
func mixSpecs(t *testing.T, baseURL string, mix []share, rate float64, d time.Duration) []loadgen.Spec {
	t.Helper()
	specs := make([]loadgen.Spec, 0, len(mix))
	for _, s := range mix {
		shape, err := plan.ShapeByName(s.shape)
		if err != nil {
			t.Fatal(err)
		}
		qps := rate * s.fraction
		specs = append(specs, loadgen.Spec{
			URL: baseURL + benignPath, Method: shape.Method, ContentType: shape.ContentType, Body: shape.Body,
			QPS: qps, Connections: connectionsFor(qps, d, s.maxConns), Duration: d, RequestTimeout: requestTimeout,
			// A steady mix, as the bounds were set on: a connection that
			// fell behind skips, it does not burst.
			NoCatchUp: true,
		})
	}
	return specs
}

// connectionsFor keeps at least two calls per connection, below which
// Fortio would drop connections (loadgen rejects such a spec).
func connectionsFor(qps float64, d time.Duration, maxConns int) int {
	return max(1, min(maxConns, int(qps*d.Seconds()/2)))
}

// runMix drives every spec at once and returns their results in order.
func runMix(ctx context.Context, specs []loadgen.Spec) ([]loadgen.Result, error) {
	results := make([]loadgen.Result, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, spec := range specs {
		wg.Go(func() {
			results[i], errs[i] = loadgen.Run(ctx, spec)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s %s at %.1f RPS: %w", spec.Method, spec.URL, spec.QPS, errs[i])
			}
		})
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// mixTotals adds up the streams of one mixed run.
type mixTotals struct {
	Scheduled, Completed, Non2xx, SocketErrors int64
}

func totalsOf(results []loadgen.Result) mixTotals {
	var m mixTotals
	for _, r := range results {
		m.Scheduled += r.Scheduled
		m.Completed += r.Completed
		m.Non2xx += r.Non2xx
		m.SocketErrors += r.SocketErrors
	}
	return m
}
