package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
)

func auditKnee(flavor, tier string, knee int, cores, auditBytes, diskBytesPerS float64) dataset.KneeRow {
	return dataset.KneeRow{
		ConfigID: flavor + "/" + tier + "/get", Flavor: flavor, Tier: tier, Shape: "get", Round: dataset.AllRounds,
		KneeRPS: knee, Censored: dataset.CensoredNone, CoresPer1kAtKnee: cores,
		AuditBytesPerReqAtKnee: auditBytes, ProxyDiskWriteBytesPerSAtKnee: diskBytesPerS,
	}
}

func TestAuditTable(t *testing.T) {
	unaudited := auditKnee("waf", "full-crs", 1200, 0.82, math.NaN(), 0)
	audited := auditKnee("waf", "full-crs-audit", 900, 1.1, 2150, 1_935_000)
	tests := []struct {
		name    string
		summary []dataset.KneeRow
		want    []string // lines of the table, in order; none: no section
	}{
		{"no audit log in the sweep", []dataset.KneeRow{unaudited}, nil},
		{"the audit tier beside full CRS", []dataset.KneeRow{unaudited, audited}, []string{
			"| `waf/full-crs-audit/get` | 900 | 1.100 | 2150 | 1.94 | `waf/full-crs/get` | 1200 | 0.820 |",
		}},
		{"an audited tier without its twin (--audit-log)", []dataset.KneeRow{auditKnee("waf", "full-crs", 1000, 1.0, 2100, 2_100_000)}, []string{
			"| `waf/full-crs/get` | 1000 | 1.000 | 2100 | 2.10 | not in this sweep |  |  |",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			writeAuditSection(&b, tc.summary, []string{"waf"})
			got := b.String()
			if tc.want == nil {
				if got != "" {
					t.Fatalf("section written:\n%s", got)
				}
				return
			}
			if !strings.HasPrefix(got, "## Audit log\n") {
				t.Fatalf("no audit section:\n%s", got)
			}
			for _, line := range tc.want {
				if !strings.Contains(got, line+"\n") {
					t.Errorf("missing row %q in\n%s", line, got)
				}
			}
		})
	}
}
