package report

import (
	"bytes"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
)

// writeMembersSection is the report's "Mixed shapes and attacks" section:
// for each configuration whose steps were several runs (a mixed shape's
// members, attacks sent beside the load), each run at the knee, its rate
// and its own latency, beside the configuration's knee and latency as a
// whole; nothing for a sweep without such configurations.
func writeMembersSection(b *bytes.Buffer, steps []dataset.StepRow, knees, summary []dataset.KneeRow, members []dataset.MemberRow) {
	rows := memberRows(steps, knees, summary, members)
	if len(rows) == 0 {
		return
	}
	b.WriteString("## Mixed shapes and attacks\n\n")
	b.WriteString("A mixed shape sends its members together, each at its weight's share of the step's rate over connections " +
		"of its own, measured over the same window; the knee is the mix's as a whole. Attacks (`--attack-share`) " +
		"are sent beside the benign load, each over a connection of its own, and kept out of the step's counts and " +
		"latency: a step passes only if every attack got its status (blocked, 403, where the configuration inspects) " +
		"and no benign call was blocked. Their latency is the blocked requests' own; their CPU is in the step's cores " +
		"per 1k, which counts the benign calls (the proxy's CPU is not split by request: set a sweep without " +
		"`--attack-share` beside it for the difference). Per run, in the passing run at each round's knee (median " +
		"over the rounds); members.csv has every step.\n\n")
	writeTableHeader(b, memberColumns)
	for _, row := range rows {
		writeTableRow(b, row)
	}
	b.WriteString("\n")
	writeContestedKneeNote(b, summary)
}

// membersTable is the generated doc section of kind "members": each
// dataset's configurations of several runs, as the report's section shows
// them.
func membersTable(dir string, datasets []string) ([]byte, error) {
	var b bytes.Buffer
	writeTableHeader(&b, append([]string{"Dataset"}, memberColumns...))
	var shown []dataset.KneeRow
	for _, d := range datasets {
		sw, err := dataset.ReadSweep(filepath.Join(dir, d))
		if err != nil {
			return nil, err
		}
		name := "`" + shownPath(d) + "`"
		summary := sortedSummary(sw)
		for _, row := range memberRows(sw.Steps, sw.Knees, summary, sw.Members) {
			writeTableRow(&b, append([]string{name}, row...))
			name = "" // once per dataset, as the configuration is once per configuration
		}
		shown = append(shown, summary...)
	}
	writeTableEnd(&b, shown)
	return b.Bytes(), nil
}

var memberColumns = []string{"Config", "Knee RPS", "Rounds (min-max)", "Cores/1k RPS", "p99 ms at the knee",
	"Run", "Role", "Weight", "RPS", "p50 ms", "p99 ms"}

// memberRows are the cells of memberColumns for every configuration of
// summary that has members.
func memberRows(steps []dataset.StepRow, knees, summary []dataset.KneeRow, members []dataset.MemberRow) [][]string {
	var rows [][]string
	for _, k := range summary {
		if slices.ContainsFunc(members, func(m dataset.MemberRow) bool { return m.ConfigID == k.ConfigID }) {
			rows = append(rows, memberCells(steps, knees, members, k)...)
		}
	}
	return rows
}

// memberCells are the cells of a configuration's runs at its knee.
func memberCells(steps []dataset.StepRow, knees []dataset.KneeRow, members []dataset.MemberRow, k dataset.KneeRow) [][]string {
	type figures struct {
		role          string
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
				f = &figures{role: roleText(m), weight: m.Weight}
				byMember[m.Member] = f
				order = append(order, m.Member)
			}
			f.rps, f.p50, f.p99 = append(f.rps, m.AchievedRPS), append(f.p50, m.P50Ms), append(f.p99, m.P99Ms)
		}
	}
	config := []string{"`" + k.ConfigID + "`", kneeText(k), roundsText(k), fmtNum(k.CoresPer1kAtKnee, 3), fmtNum(k.P99MsAtKnee, 1)}
	if len(order) == 0 {
		return [][]string{append(config, "no passing run at the knee", "", "", "", "", "")}
	}
	var rows [][]string
	for i, name := range order {
		f := byMember[name]
		lead := make([]string, len(config))
		if i == 0 {
			lead = config
		}
		weight := ""
		if f.weight > 0 {
			weight = strconv.Itoa(f.weight)
		}
		rows = append(rows, append(lead, mdText(name), f.role, weight, fmtNum(dataset.Median(f.rps), 1),
			fmtNum(dataset.Median(f.p50), 2), fmtNum(dataset.Median(f.p99), 2)))
	}
	return rows
}

// roleText is a run's role as the table shows it: an attack with the
// status it must get.
func roleText(m dataset.MemberRow) string {
	if m.Role == dataset.RoleAttack {
		return "attack (" + strconv.Itoa(m.WantStatus) + ")"
	}
	return m.Role
}
