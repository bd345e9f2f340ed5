package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
)

// The worked line plans on the rounds' low end of the middle objective's
// rate, and passes over vanilla Envoy and rates another run there was
// over.
func TestWorkedLinePlansOnTheLowestRoundAndNoContestedRate(t *testing.T) {
	meta := dataset.Metadata{CoreAssignment: map[string]string{"proxy": "1"}}
	row := func(config, flavor string, rps, rounds int, low float64, status string) dataset.SLOKneeRow {
		return dataset.SLOKneeRow{Round: dataset.AllRounds, ConfigID: config, Flavor: flavor, SLOMs: 50, KneeRPS: rps,
			Rounds: rounds, KneeMinRPS: low, KneeMaxRPS: float64(rps), Status: status}
	}
	envoy := row("envoy/none/get", "envoy", 10000, 3, 10000, dataset.SLOAtBound)
	tests := []struct {
		name string
		rows []dataset.SLOKneeRow
		want string
	}{
		{"one round", []dataset.SLOKneeRow{envoy, row("waf/full-crs/get", "waf", 1000, 1, math.NaN(), dataset.SLOSearched)},
			"Worked example: `waf/full-crs/get` served 1000 RPS per proxy of 1 core(s) at p99 <= 50 ms, so 10 instances of 1 core(s) serve 10000 RPS at p99 <= 50 ms."},
		{"rounds apart", []dataset.SLOKneeRow{envoy, row("waf/full-crs/get", "waf", 1000, 3, 760, dataset.SLOSearched)},
			"Worked example: `waf/full-crs/get` served 760 RPS per proxy of 1 core(s) at p99 <= 50 ms in its lowest round, so 14 instances of 1 core(s) serve 10000 RPS at p99 <= 50 ms."},
		{"rounds alike", []dataset.SLOKneeRow{row("waf/full-crs/get", "waf", 1000, 3, 1000, dataset.SLOAtBound)},
			"Worked example: `waf/full-crs/get` served 1000 RPS per proxy of 1 core(s) at p99 <= 50 ms, so 10 instances of 1 core(s) serve 10000 RPS at p99 <= 50 ms."},
		{"contested passed over", []dataset.SLOKneeRow{row("waf/full-crs/get", "waf", 1000, 3, 970, dataset.SLOContested),
			row("waf-accelerated/full-crs/get", "waf-accelerated", 1200, 3, 1200, dataset.SLOSearched)},
			"Worked example: `waf-accelerated/full-crs/get` served 1200 RPS per proxy of 1 core(s) at p99 <= 50 ms, so 9 instances of 1 core(s) serve 10000 RPS at p99 <= 50 ms."},
		{"nothing to plan on", []dataset.SLOKneeRow{envoy, row("waf/full-crs/get", "waf", 1000, 3, 970, dataset.SLOContested)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := workedLine(meta, tt.rows, []float64{50}); got != tt.want {
				t.Errorf("workedLine:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// A rate whose p99 came from fewer than dataset.ThinP99Calls calls is
// marked, and the note under the table gives the fewest; a rate read from
// enough calls, or not met at all, is not.
func TestPlannerTableMarksAThinP99(t *testing.T) {
	row := func(config string, slo float64, rps int, calls int64) dataset.SLOKneeRow {
		return dataset.SLOKneeRow{Round: dataset.AllRounds, Rounds: 1, ConfigID: config, Flavor: "waf", SLOMs: slo,
			KneeRPS: rps, CallsAtKnee: calls, Status: dataset.SLOSearched, CoresPer1k: 0.5}
	}
	tests := []struct {
		name      string
		rows      []dataset.SLOKneeRow
		wantCells []string
		wantNote  string // "" for no note
	}{
		{"thin", []dataset.SLOKneeRow{row("waf/targeted/json_10k", 10, 40, 790), row("waf/targeted/json_10k", 50, 600, 12000)},
			[]string{"| 40 " + thinMark + " |", "| 600 |"}, "(790 at the fewest"},
		{"fewest of two", []dataset.SLOKneeRow{row("waf/a/get", 10, 40, 790), row("waf/b/get", 10, 12, 240)},
			[]string{"| 40 " + thinMark + " |", "| 12 " + thinMark + " |"}, "(240 at the fewest"},
		{"enough calls", []dataset.SLOKneeRow{row("waf/targeted/get", 10, 3000, 60000)}, []string{"| 3000 |"}, ""},
		{"not met", []dataset.SLOKneeRow{row("waf/targeted/get", 10, 0, 0)}, []string{"| < floor (searched) |"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			writePlannerTable(&b, "", dataset.Metadata{}, tt.rows, nil)
			got := b.String()
			for _, cell := range tt.wantCells {
				if !strings.Contains(got, cell) {
					t.Errorf("no cell %q in\n%s", cell, got)
				}
			}
			if note := strings.Contains(got, thinMark+" Its p99"); note != (tt.wantNote != "") || !strings.Contains(got, tt.wantNote) {
				t.Errorf("thin-p99 note: want %q in\n%s", tt.wantNote, got)
			}
		})
	}
}
