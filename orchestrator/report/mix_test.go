package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
)

// A mix's members are shown at the knee: from each round's passing run at
// its knee rate, not from a failed run above it, the median over rounds.
func TestMixSectionShowsEachMemberAtTheKnee(t *testing.T) {
	const id = "waf/full-crs/mix:get=3,json_1k=1"
	step := func(round, seq, rate int, verdict string) dataset.StepRow {
		return dataset.StepRow{Round: round, ConfigID: id, Seq: seq, Kind: "ladder", TargetRPS: rate, Verdict: verdict}
	}
	member := func(round, seq int, name string, weight int, rps, p99 float64) dataset.MemberRow {
		return dataset.MemberRow{Round: round, ConfigID: id, Seq: seq, Member: name, Weight: weight, AchievedRPS: rps, P50Ms: p99 / 2, P99Ms: p99}
	}
	steps := []dataset.StepRow{step(0, 0, 400, dataset.VerdictPass), step(0, 1, 800, dataset.VerdictFail),
		step(1, 0, 400, dataset.VerdictPass)}
	members := []dataset.MemberRow{
		member(0, 0, "get", 3, 300, 4), member(0, 0, "json_1k", 1, 100, 20),
		member(0, 1, "get", 3, 500, 900), member(0, 1, "json_1k", 1, 150, 3000),
		member(1, 0, "get", 3, 300, 6), member(1, 0, "json_1k", 1, 100, 30),
	}
	round := func(r int) dataset.KneeRow {
		return dataset.KneeRow{Round: r, ConfigID: id, Shape: "mix:get=3,json_1k=1", KneeRPS: 400, Rounds: 1}
	}
	all := round(dataset.AllRounds)
	all.Rounds, all.P99MsAtKnee = 2, 25
	var b bytes.Buffer
	writeMixSection(&b, steps, []dataset.KneeRow{round(0), round(1), all}, []dataset.KneeRow{all}, members)
	for _, want := range []string{
		"| `" + id + "` | 400 | 25.0 | get | 3 | 300 | 2.50 | 5.00 |",
		"|  |  |  | json_1k | 1 | 100 | 12.50 | 25.00 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("want %q in\n%s", want, b.String())
		}
	}
	var none bytes.Buffer
	writeMixSection(&none, steps, nil, []dataset.KneeRow{{ConfigID: "waf/full-crs/get", Shape: "get"}}, nil)
	if none.Len() != 0 {
		t.Errorf("a sweep without a mix has a mix section:\n%s", none.String())
	}
}
