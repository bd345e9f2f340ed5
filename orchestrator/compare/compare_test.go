package compare

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
)

func aggregate(config string, knee int, lo, hi float64, rounds int) dataset.KneeRow {
	return dataset.KneeRow{ConfigID: config, Round: dataset.AllRounds, Rounds: rounds, KneeRPS: knee,
		KneeMinRPS: lo, KneeMaxRPS: hi, CoresPer1kAtKnee: 0.5}
}

func TestKneesSaysWhetherADifferenceExceedsTheSpread(t *testing.T) {
	a := []dataset.KneeRow{
		aggregate("waf/full-crs/get", 1000, 950, 1050, 3),
		aggregate("waf/targeted/get", 3000, 2900, 3100, 3),
		aggregate("envoy/none/get", 9000, 9000, 9000, 1),
		aggregate("waf/full-crs/json_1k", 200, 190, 210, 3),
		{ConfigID: "waf/full-crs/get", Round: 0, KneeRPS: 1}, // a round row: ignored
	}
	b := []dataset.KneeRow{
		aggregate("waf/full-crs/get", 1200, 1150, 1250, 3),                          // moved beyond the spread
		aggregate("waf/targeted/get", 3050, 3000, 3150, 3),                          // within
		aggregate("envoy/none/get", 9500, 9500, 9500, 1),                            // one round: no spread
		{ConfigID: "waf/full-crs/json_1k", Round: dataset.AllRounds, Invalid: true}, // not comparable
	}
	rows := Knees(a, b)
	want := map[string]string{"waf/full-crs/get": "beyond spread", "waf/targeted/get": "within spread", "envoy/none/get": "no spread"}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if r.Verdict != want[r.ConfigID] || r.Significant != (want[r.ConfigID] == "beyond spread") {
			t.Errorf("%s: %s (significant %v), want %s", r.ConfigID, r.Verdict, r.Significant, want[r.ConfigID])
		}
	}
	if d, share := rows[0].Difference(); d != 200 || math.Abs(share-0.2) > 1e-9 {
		t.Errorf("difference %d (%v), want +200 (20%%)", d, share)
	}
	var out bytes.Buffer
	if err := WriteMarkdown(&out, "old", "new", rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| `waf/full-crs/get` | 1000 | 1200 | +200 (+20.0%) | 950-1050 (3 rounds) | 1150-1250 (3 rounds) | 0.500 | 0.500 | beyond spread |") {
		t.Errorf("markdown:\n%s", out.String())
	}
}
