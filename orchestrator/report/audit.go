package report

import (
	"bytes"
	"math"
	"slices"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

var auditColumns = []string{
	"Config", "Knee RPS", "Cores/1k RPS", "Audit bytes/request", "Disk writes MB/s",
	"Without the audit log", "Knee RPS", "Cores/1k RPS",
}

// writeAuditTable sets each configuration that wrote an audit log beside
// the same flavor and shape without one, when the sweep measured it: what
// the audit log costs in rate, CPU and bytes. It writes nothing for a sweep
// without an audit log.
func writeAuditTable(b *bytes.Buffer, summary []dataset.KneeRow, flavors []string) {
	audited := filter(summary, func(k dataset.KneeRow) bool { return !math.IsNaN(k.AuditBytesPerReqAtKnee) })
	if len(audited) == 0 {
		return
	}
	sortByConfig(audited, flavors)
	b.WriteString("## Audit log\n\n")
	b.WriteString("Configurations that wrote an audit log of every transaction (tier full-crs-audit, or the plan's " +
		"audit_log), at their knee: the log's growth per request and the proxy's writes to storage (0 on a file " +
		"system in memory), beside the same flavor and shape without the audit log when this sweep measured it. " +
		"For a sweep run with --audit-log, run the same plan without it and set the two side by side with " +
		"`wafsweep compare`.\n\n")
	writeTableHeader(b, auditColumns)
	for _, k := range audited {
		row := []string{"`" + k.ConfigID + "`", kneeText(k), fmtNum(k.CoresPer1kAtKnee, 3),
			fmtNum(k.AuditBytesPerReqAtKnee, 0), fmtNum(k.ProxyDiskWriteBytesPerSAtKnee/1e6, 2)}
		if twin, ok := unaudited(summary, k); ok {
			row = append(row, "`"+twin.ConfigID+"`", kneeText(twin), fmtNum(twin.CoresPer1kAtKnee, 3))
		} else {
			row = append(row, "not in this sweep", "", "")
		}
		writeTableRow(b, row)
	}
	b.WriteString("\n")
}

// unaudited finds k's configuration without the audit log: the tier the
// audited tier adds its log to, same flavor and shape, itself not audited.
func unaudited(summary []dataset.KneeRow, k dataset.KneeRow) (dataset.KneeRow, bool) {
	tier, ok := plan.UnauditedTier(k.Tier)
	if !ok {
		return dataset.KneeRow{}, false
	}
	i := slices.IndexFunc(summary, func(s dataset.KneeRow) bool {
		return s.Flavor == k.Flavor && s.Shape == k.Shape && s.Tier == tier && math.IsNaN(s.AuditBytesPerReqAtKnee)
	})
	if i < 0 {
		return dataset.KneeRow{}, false
	}
	return summary[i], true
}
