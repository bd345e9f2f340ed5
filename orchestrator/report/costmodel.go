package report

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
)

var costColumns = []string{"Config", "Idle cores", "Cores per 1k RPS", "Fit error (cores)", "Steps", "Rates fitted", "Cores at the knee"}

// writeCostSection is the report's "Cost model" section: each
// configuration's CPU as idle + marginal x rate (dataset.CostModel), what
// a planner sizes a rate from, and the line's value at the knee.
func writeCostSection(b *bytes.Buffer, steps []dataset.StepRow, summary []dataset.KneeRow) {
	rows := slices.Clone(summary)
	if !slices.ContainsFunc(rows, func(k dataset.KneeRow) bool { return k.Cost.Steps > 0 }) {
		return
	}
	sortByConfig(rows, flavorOrder(steps, rows))
	b.WriteString("## Cost model\n\n")
	b.WriteString("Each configuration's CPU (the proxy's; the backend's for `direct`) fitted by least squares over " +
		"its passing steps as a line in the rate it served: cores = idle + cores per 1k RPS x rate / 1000. " +
		"Cores per 1k RPS at one rate mix the two terms and fall as the rate rises, so size a rate from the " +
		"line, within the rates it was fitted on; the fit error is the steps' standard deviation about it.\n\n")
	writeTableHeader(b, costColumns)
	for _, k := range rows {
		writeTableRow(b, costCells(k))
	}
	b.WriteString("\n")
}

func costCells(k dataset.KneeRow) []string {
	c := k.Cost
	rates := "n/a"
	if c.Steps > 0 {
		rates = strconv.Itoa(c.LowRPS) + "-" + strconv.Itoa(c.HighRPS)
	}
	atKnee := "n/a"
	if !k.Invalid && k.KneeRPS > 0 {
		atKnee = fmtNum(c.Cores(float64(k.KneeRPS)), 3)
	}
	return []string{"`" + k.ConfigID + "`", fmtNum(c.IdleCores, 3), fmtNum(c.CoresPer1k, 3), fmtNum(c.RMSECores, 3),
		strconv.Itoa(c.Steps), rates, atKnee}
}
