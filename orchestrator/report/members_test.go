package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
)

// A configuration's runs are shown at the knee: from each round's passing
// run at its knee rate, not from a failed run above it, the median over
// rounds; attacks with the status they must get.
func TestMembersSectionShowsEachRunAtTheKnee(t *testing.T) {
	const id = "waf/full-crs/mix:get=3,json_1k=1"
	step := func(round, seq, rate int, verdict string) dataset.StepRow {
		return dataset.StepRow{Round: round, ConfigID: id, Seq: seq, Kind: "ladder", TargetRPS: rate, Verdict: verdict}
	}
	member := func(round, seq int, name string, weight int, rps, p99 float64) dataset.MemberRow {
		return dataset.MemberRow{Round: round, ConfigID: id, Seq: seq, Member: name, Role: dataset.RoleBenign, Weight: weight,
			AchievedRPS: rps, P50Ms: p99 / 2, P99Ms: p99}
	}
	attack := func(round, seq int, p99 float64) dataset.MemberRow {
		return dataset.MemberRow{Round: round, ConfigID: id, Seq: seq, Member: "SQLi in the query", Role: dataset.RoleAttack,
			WantStatus: 403, AchievedRPS: 1, P50Ms: p99 / 2, P99Ms: p99}
	}
	steps := []dataset.StepRow{step(0, 0, 400, dataset.VerdictPass), step(0, 1, 800, dataset.VerdictFail),
		step(1, 0, 400, dataset.VerdictPass)}
	members := []dataset.MemberRow{
		member(0, 0, "get", 3, 300, 4), member(0, 0, "json_1k", 1, 100, 20), attack(0, 0, 2),
		member(0, 1, "get", 3, 500, 900), member(0, 1, "json_1k", 1, 150, 3000), attack(0, 1, 800),
		member(1, 0, "get", 3, 300, 6), member(1, 0, "json_1k", 1, 100, 30), attack(1, 0, 4),
	}
	round := func(r int) dataset.KneeRow {
		return dataset.KneeRow{Round: r, ConfigID: id, Shape: "mix:get=3,json_1k=1", KneeRPS: 400, Rounds: 1}
	}
	all := round(dataset.AllRounds)
	all.Rounds, all.P99MsAtKnee, all.CoresPer1kAtKnee, all.KneeMinRPS, all.KneeMaxRPS = 2, 25, 9.5, 400, 400
	var b bytes.Buffer
	writeMembersSection(&b, steps, []dataset.KneeRow{round(0), round(1), all}, []dataset.KneeRow{all}, members)
	for _, want := range []string{
		"## Mixed shapes and attacks",
		"| `" + id + "` | 400 | 2 (400-400) | 9.500 | 25.0 | get | benign | 3 | 300.0 | 2.50 | 5.00 |",
		"|  |  |  |  |  | json_1k | benign | 1 | 100.0 | 12.50 | 25.00 |",
		"|  |  |  |  |  | SQLi in the query | attack (403) |  | 1.0 | 1.50 | 3.00 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("want %q in\n%s", want, b.String())
		}
	}
	var none bytes.Buffer
	writeMembersSection(&none, steps, nil, []dataset.KneeRow{{ConfigID: "waf/full-crs/get", Shape: "get"}}, nil)
	if none.Len() != 0 {
		t.Errorf("a sweep without members has a members section:\n%s", none.String())
	}
}
