package soak

import (
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/knee"
)

// The knee of the mix is measured quickly: short steps, a coarse gap and a
// descent below the ladder. Full CRS is expensive on JSON bodies (on a
// shared 2-core machine Envoy spends about 2 ms of CPU on a GET, 12 ms on
// json_1k and 130 ms on json_10k), so the mix's knee there is around 40 RPS;
// the ladder starts low enough that the first step is not a gross overload,
// and the descent covers slower machines. The soak runs at 80% of the knee,
// so a knee a little off moves the load a little, not the verdict.
var (
	kneeLadder  = []int{50, 100, 200, 400, 800}
	kneeOptions = knee.Options{Confirm: true, MaxInvalidRetries: -1, MinGap: 20, GapFraction: 0.1, Floor: 10}
)

const (
	// kneeStep is short, but long enough that one call missing from a few
	// hundred does not fail a step by itself (3 s steps at 30 RPS schedule 88).
	kneeStep  = 5 * time.Second
	kneePause = 500 * time.Millisecond // lets queues empty between steps
	// soakFraction of the knee is the soak's rate.
	soakFraction = 0.8
)

// measureKnee runs the knee search over a mix and returns the knee with
// the steps it took. A knee censored above is the top of the ladder.
func measureKnee(t *testing.T, p *proxy, mix []share) (int, []knee.Step) {
	t.Helper()
	search, err := knee.NewSearch(kneeLadder, kneeOptions)
	if err != nil {
		t.Fatal(err)
	}
	for {
		rate, kind, done := search.Next()
		if done {
			break
		}
		results, err := runMix(t.Context(), mixSpecs(t, p.baseURL, mix, float64(rate), kneeStep))
		if err != nil {
			t.Fatalf("knee step at %d RPS: %v", rate, err)
		}
		totals := totalsOf(results)
		step := knee.Step{Target: rate, Scheduled: totals.Scheduled, Completed: totals.Completed,
			Errors: totals.Non2xx + totals.SocketErrors}
		t.Logf("knee %s step %d RPS: completed %d/%d, errors %d, passed %v",
			kind, rate, step.Completed, step.Scheduled, step.Errors, step.Passed())
		if err := search.Record(step); err != nil {
			t.Fatal(err)
		}
		time.Sleep(kneePause)
	}
	result := search.Result()
	if result.CensoredBelow || result.Invalid || result.Knee == 0 {
		t.Fatalf("no knee for the soak mix (censored below %d RPS: %v, invalid: %v %v); Envoy log:\n%s",
			result.Bound, result.CensoredBelow, result.Invalid, result.Reasons, p.logTail())
	}
	return result.Knee, result.Steps
}
