package report

import (
	"bytes"
	"math"
	"path/filepath"
	"slices"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

var auditColumns = []string{
	"Config", "Knee RPS", "Cores/1k RPS", "Audit bytes/request", "Disk writes MB/s",
	"Without the audit log", "Knee RPS", "Cores/1k RPS",
}

// writeAuditSection is the report's "Audit log" section (see auditRows);
// nothing for a sweep without an audit log.
func writeAuditSection(b *bytes.Buffer, summary []dataset.KneeRow, flavors []string) {
	if !slices.ContainsFunc(summary, audited) {
		return
	}
	b.WriteString("## Audit log\n\n")
	b.WriteString("Configurations that wrote an audit log of every transaction (tier full-crs-audit, or the plan's " +
		"audit_log), at their knee: the log's growth per request and the proxy's writes to storage (0 on a file " +
		"system in memory), beside the same flavor and shape without the audit log when this sweep measured it. " +
		"For a sweep run with --audit-log, run the same plan without it and set the two side by side with " +
		"`wafsweep compare`.\n\n")
	writeTableHeader(b, auditColumns)
	for _, row := range auditRows(summary, flavors) {
		writeTableRow(b, row)
	}
	b.WriteString("\n")
}

// auditTable is the generated doc section of kind "audit": the audit-log
// rows of each dataset.
func auditTable(dir string, datasets []string) ([]byte, error) {
	var b bytes.Buffer
	writeTableHeader(&b, append([]string{"Dataset"}, auditColumns...))
	for _, d := range datasets {
		sw, err := dataset.ReadSweep(filepath.Join(dir, d))
		if err != nil {
			return nil, err
		}
		summary := sortedSummary(sw)
		for _, row := range auditRows(summary, flavorOrder(sw.Steps, summary)) {
			writeTableRow(&b, append([]string{"`" + shownPath(d) + "`"}, row...))
		}
	}
	return b.Bytes(), nil
}

// auditRows are the cells of auditColumns: each configuration that wrote
// an audit log beside the same flavor and shape without one, when the
// summary has it; what the audit log costs in rate, CPU and bytes.
func auditRows(summary []dataset.KneeRow, flavors []string) [][]string {
	logged := filter(summary, audited)
	sortByConfig(logged, flavors)
	var rows [][]string
	for _, k := range logged {
		cells := []string{"`" + k.ConfigID + "`", kneeText(k), fmtNum(k.CoresPer1kAtKnee, 3),
			fmtNum(k.AuditBytesPerReqAtKnee, 0), fmtNum(k.ProxyDiskWriteBytesPerSAtKnee/1e6, 2)}
		if twin, ok := unaudited(summary, k); ok {
			cells = append(cells, "`"+twin.ConfigID+"`", kneeText(twin), fmtNum(twin.CoresPer1kAtKnee, 3))
		} else {
			cells = append(cells, "not in this sweep", "", "")
		}
		rows = append(rows, cells)
	}
	return rows
}

func audited(k dataset.KneeRow) bool { return !math.IsNaN(k.AuditBytesPerReqAtKnee) }

// unaudited finds k's configuration without the audit log: the tier the
// audited tier adds its log to, same flavor and shape, itself not audited.
func unaudited(summary []dataset.KneeRow, k dataset.KneeRow) (dataset.KneeRow, bool) {
	tier, ok := plan.UnauditedTier(k.Tier)
	if !ok {
		return dataset.KneeRow{}, false
	}
	i := slices.IndexFunc(summary, func(s dataset.KneeRow) bool {
		return s.Flavor == k.Flavor && s.Shape == k.Shape && s.Tier == tier && !audited(s)
	})
	if i < 0 {
		return dataset.KneeRow{}, false
	}
	return summary[i], true
}
