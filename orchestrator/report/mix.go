package report

import (
	"bytes"
	"strconv"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// writeMixSection is the report's "Mixed shapes" section: each mixed
// configuration's members at its knee, their share of the rate and their
// own latency, beside the mix's knee and latency as a whole; nothing for a
// sweep without a mix.
func writeMixSection(b *bytes.Buffer, steps []dataset.StepRow, knees, summary []dataset.KneeRow, members []dataset.MemberRow) {
	mixes := filter(summary, func(k dataset.KneeRow) bool { return plan.IsMix(k.Shape) })
	if len(mixes) == 0 {
		return
	}
	b.WriteString("## Mixed shapes\n\n")
	b.WriteString("A mixed shape sends its members together, each at its weight's share of the step's rate over its share " +
		"of the connections, measured over the same window; the knee is the mix's as a whole. Per member, in the " +
		"passing run at each round's knee (median over the rounds): the rate it got and its own latency, corrected " +
		"like the mix's (members.csv has every step).\n\n")
	writeTableHeader(b, []string{"Config", "Knee RPS", "p99 ms at the knee", "Member", "Weight", "Member RPS", "Member p50 ms", "Member p99 ms"})
	for _, k := range mixes {
		for _, row := range mixMemberRows(steps, knees, members, k) {
			writeTableRow(b, row)
		}
	}
	b.WriteString("\n")
}

// mixMemberRows are the cells of a mix's members at its knee.
func mixMemberRows(steps []dataset.StepRow, knees []dataset.KneeRow, members []dataset.MemberRow, k dataset.KneeRow) [][]string {
	type figures struct {
		weight        int
		rps, p50, p99 []float64
	}
	byMember := map[string]*figures{}
	var order []string
	for _, at := range kneeSteps(steps, knees, k.ConfigID) {
		for _, m := range members {
			if !m.Of(at) {
				continue
			}
			f := byMember[m.Member]
			if f == nil {
				f = &figures{weight: m.Weight}
				byMember[m.Member] = f
				order = append(order, m.Member)
			}
			f.rps, f.p50, f.p99 = append(f.rps, m.AchievedRPS), append(f.p50, m.P50Ms), append(f.p99, m.P99Ms)
		}
	}
	mix := []string{"`" + k.ConfigID + "`", kneeText(k), fmtNum(k.P99MsAtKnee, 1)}
	if len(order) == 0 {
		return [][]string{append(mix, "no passing run at the knee", "", "", "", "")}
	}
	var rows [][]string
	for i, name := range order {
		f := byMember[name]
		lead := []string{"", "", ""}
		if i == 0 {
			lead = mix
		}
		rows = append(rows, append(lead, name, strconv.Itoa(f.weight), fmtNum(dataset.Median(f.rps), 0),
			fmtNum(dataset.Median(f.p50), 2), fmtNum(dataset.Median(f.p99), 2)))
	}
	return rows
}
