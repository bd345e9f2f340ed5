package soak

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/precheck"
)

// attackInterval spaces the attacks: one per second, a trickle next to the
// benign load, so blocking is exercised all along without dominating.
const attackInterval = time.Second

// attacks are the pre-check's attacks the full-crs tier must block: SQLi in
// the query and in a JSON body, XSS in a JSON body, a scanner user agent.
func attacks(t *testing.T) []precheck.Check {
	t.Helper()
	checks, err := precheck.Checks(plan.Config{Flavor: plan.FlavorWAF, Tier: plan.TierFullCRS, Shape: plan.ShapeGet})
	if err != nil {
		t.Fatal(err)
	}
	var out []precheck.Check
	for _, c := range checks {
		if c.WantStatus == http.StatusForbidden {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		t.Fatal("the pre-check lists no attacks for full-crs")
	}
	return out
}

// attackTally is what the attack loop saw.
type attackTally struct {
	Sent, Blocked int
	Misses        []string // attacks not answered 403, with what they got
}

// driveAttacks sends the attacks round-robin every attackInterval until ctx
// ends. Each goes on its own connection, as a one-off client's would. An
// attack under way when ctx ends is finished and counted, so the tally
// matches what Envoy counted.
func driveAttacks(ctx context.Context, baseURL string, checks []precheck.Check) attackTally {
	var tally attackTally
	ticker := time.NewTicker(attackInterval)
	defer ticker.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return tally
		case <-ticker.C:
		}
		c := checks[i%len(checks)]
		status, _, _, err := loadgen.Probe(context.WithoutCancel(ctx), loadgen.Spec{URL: baseURL + c.Path, Method: c.Method,
			ContentType: c.ContentType, Body: c.Body, Headers: c.Headers, RequestTimeout: requestTimeout})
		tally.Sent++
		switch {
		case err != nil:
			tally.Misses = append(tally.Misses, fmt.Sprintf("%s: %v", c.Name, err))
		case status != c.WantStatus:
			tally.Misses = append(tally.Misses, fmt.Sprintf("%s: status %d", c.Name, status))
		default:
			tally.Blocked++
		}
	}
}
