package report

import (
	"bytes"
	"path/filepath"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
)

// transportTable is the generated doc section of kind "transport": each
// dataset's configurations with the transport the load reached them over,
// so that sweeps differing in it are read side by side. The audit log's
// configurations are left to the "audit" table. Beside the proxy's
// figures it gives the load generator's own CPU per request at the knee:
// over HTTP/2 it is Fortio's standard client, a heavier instrument.
func transportTable(dir string, datasets []string) ([]byte, error) {
	var b bytes.Buffer
	writeTableHeader(&b, []string{"Dataset", "Transport", "Config", "Knee RPS", "Rounds (min-max)",
		"Cores/1k RPS", "p99 ms", "Load generator µs CPU/request"})
	var shown []dataset.KneeRow
	for _, d := range datasets {
		sw, err := dataset.ReadSweep(filepath.Join(dir, d))
		if err != nil {
			return nil, err
		}
		name := sw.Meta.Plan.Transport().Name()
		for _, k := range sortedSummary(sw) {
			if audited(k) {
				continue
			}
			writeTableRow(&b, []string{"`" + shownPath(d) + "`", name, "`" + k.ConfigID + "`", kneeText(k), roundsText(k),
				fmtNum(k.CoresPer1kAtKnee, 3), fmtNum(k.P99MsAtKnee, 1), fmtNum(loadgenMicrosAtKnee(sw, k.ConfigID), 0)})
			shown = append(shown, k)
		}
	}
	writeTableEnd(&b, shown)
	return b.Bytes(), nil
}

// loadgenMicrosAtKnee is the load generator's CPU per completed request
// in the run at each round's knee (kneeSteps), the median over rounds (NaN
// when no round has one).
func loadgenMicrosAtKnee(sw dataset.Sweep, configID string) float64 {
	var perRound []float64
	for _, at := range kneeSteps(sw.Steps, sw.Knees, configID) {
		if at.Completed > 0 {
			perRound = append(perRound, at.LoadgenCPUS/float64(at.Completed)*1e6)
		}
	}
	return dataset.Median(perRound)
}
