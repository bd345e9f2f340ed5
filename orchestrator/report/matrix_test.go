package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// matrixSliceFiles writes a one-shape sweep named name on a machine of
// cpu, with the given all-rounds knees and SLO rows.
func matrixSliceFiles(t *testing.T, dir, name, cpu string, shapes []string, knees []dataset.KneeRow, slo []dataset.SLOKneeRow) {
	t.Helper()
	meta := dataset.Metadata{SchemaVersion: dataset.SchemaVersion, SweepID: name, CPUModel: cpu}
	meta.Plan.Shapes = shapes
	writeSweepFiles(t, filepath.Join(dir, name), meta, knees, slo, nil)
}

func matrixKneeRow(c plan.Config, knee, lo, hi int, cores float64) dataset.KneeRow {
	k := dataset.KneeRow{Round: dataset.AllRounds, Rounds: 3, ConfigID: c.ID(), Flavor: c.Flavor, Tier: c.Tier, Shape: c.Shape,
		KneeRPS: knee, Censored: dataset.CensoredNone, CoresPer1kAtKnee: cores,
		KneeMedianRPS: float64(knee), KneeMinRPS: float64(lo), KneeMaxRPS: float64(hi)}
	if knee >= 10000 {
		k.Censored, k.BoundRPS = dataset.CensoredAbove, 10000
	}
	return k
}

func matrixSLORow(c plan.Config, ms float64, rps int, calls int64) dataset.SLOKneeRow {
	return dataset.SLOKneeRow{Round: dataset.AllRounds, Rounds: 3, ConfigID: c.ID(), Flavor: c.Flavor, Tier: c.Tier, Shape: c.Shape,
		SLOMs: ms, KneeRPS: rps, Status: dataset.SLOSearched, CallsAtKnee: calls, KneeMinRPS: float64(rps), KneeMaxRPS: float64(rps)}
}

// The matrix kind sets one-shape slices side by side: a column per shape,
// a family's rows under a row of its slices' machines, each figure the
// slice's own, and a shape a family lacks marked as such.
func TestMatrixTablesSetSlicesSideBySide(t *testing.T) {
	dir := t.TempDir()
	envoy := func(shape string) plan.Config { return plan.Config{Flavor: "envoy", Tier: "none", Shape: shape} }
	waf := func(shape string) plan.Config { return plan.Config{Flavor: "waf", Tier: "full-crs", Shape: shape} }
	nginx := plan.Config{Flavor: "nginx-modsecurity", Tier: "full-crs", Shape: "get"}
	matrixSliceFiles(t, dir, "ref-json_1k", "Intel Xeon", []string{"json_1k"},
		[]dataset.KneeRow{matrixKneeRow(waf("json_1k"), 630, 600, 660, 1.5), matrixKneeRow(envoy("json_1k"), 10000, 10000, 10000, 0.2)},
		[]dataset.SLOKneeRow{matrixSLORow(waf("json_1k"), 50, 40, 800), matrixSLORow(waf("json_1k"), 10, 0, 0)})
	matrixSliceFiles(t, dir, "ref-get", "AMD EPYC", []string{"get"},
		// One round of envoy's found 5,250; two passed the ladder's top.
		[]dataset.KneeRow{matrixKneeRow(envoy("get"), 10000, 5250, 10000, 0.08), matrixKneeRow(waf("get"), 1220, 1220, 1220, 0.81)},
		[]dataset.SLOKneeRow{matrixSLORow(waf("get"), 50, 760, 15200)})
	matrixSliceFiles(t, dir, "ref-nginx-get", "Intel Xeon", []string{"get"},
		[]dataset.KneeRow{matrixKneeRow(nginx, 900, 850, 950, 1.1)}, nil)

	got, err := matrixTables(dir, []string{"ref-json_1k", "ref-get", "ref-nginx-get"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| Slices | Config | get | json_1k |",
		"| `ref-<shape>` | machine | [AMD EPYC](ref-get) | [Intel Xeon](ref-json_1k) |",
		"|  | `envoy` | >= 10000 (5250 to >= 10000) | >= 10000 |",
		"|  | `waf/full-crs` | 1220 | 630 (600-660) |",
		"| `ref-nginx-<shape>` | machine | [Intel Xeon](ref-nginx-get) | not measured |",
		"|  | `nginx-modsecurity/full-crs` | 900 (850-950) | not measured |",
		"|  | `waf/full-crs` | 0.81 | 1.50 |",
		"**Highest rate with p99 <= 10 ms (RPS)**",
		"|  | `waf/full-crs` | n/a | < floor |",
		"**Highest rate with p99 <= 50 ms (RPS)**",
		"|  | `waf/full-crs` | 760 | 40 " + thinMark + " |",
		"|  | `envoy` | n/a | n/a |",
		thinMark + " Its p99 there was read from fewer than 1000 calls (800 at the fewest",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("want %q in\n%s", want, got)
		}
	}
	if strings.Contains(string(got), contestedNote) {
		t.Errorf("a contested note without a contested rate:\n%s", got)
	}
}

// A matrix refuses what is not a set of slices: a sweep of several shapes,
// one not named after its shape, and two slices of one family and shape.
func TestMatrixTablesRefuseWhatIsNotASlice(t *testing.T) {
	dir := t.TempDir()
	waf := plan.Config{Flavor: "waf", Tier: "full-crs", Shape: "get"}
	knees := []dataset.KneeRow{matrixKneeRow(waf, 500, 500, 500, 1)}
	matrixSliceFiles(t, dir, "two-shapes-get", "CPU", []string{"get", "json_1k"}, knees, nil)
	matrixSliceFiles(t, dir, "misnamed", "CPU", []string{"get"}, knees, nil)
	matrixSliceFiles(t, dir, "a-get", "CPU", []string{"get"}, knees, nil)
	matrixSliceFiles(t, dir, "copy/a-get", "CPU", []string{"get"}, knees, nil)
	for _, tc := range []struct {
		datasets []string
		want     string
	}{
		{[]string{"two-shapes-get"}, "has 2 (get, json_1k)"},
		{[]string{"misnamed"}, "is named FAMILY-SHAPE"},
		{[]string{"a-get", "copy/a-get"}, "are both the get slice of a"},
	} {
		_, err := matrixTables(dir, tc.datasets)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one saying %q", tc.datasets, err, tc.want)
		}
	}
}

// A censored median keeps its rounds' range, written round by round.
func TestKneeRangeText(t *testing.T) {
	c := plan.Config{Flavor: "waf", Tier: "full-crs", Shape: "get"}
	below := matrixKneeRow(c, 0, 0, 120, 1)
	below.Censored, below.BoundRPS = dataset.CensoredBelow, 50
	contested := matrixKneeRow(c, 630, 600, 660, 1)
	contested.ContestedByRPS = 610
	tests := []struct {
		name string
		k    dataset.KneeRow
		want string
	}{
		{"rounds agree", matrixKneeRow(c, 630, 630, 630, 1), "630"},
		{"rounds apart", matrixKneeRow(c, 630, 600, 660, 1), "630 (600-660)"},
		{"contested", contested, "630 (600-660) " + contestedKneeMark},
		{"censored above, a round far below", matrixKneeRow(c, 10000, 5250, 10000, 1), ">= 10000 (5250 to >= 10000)"},
		{"censored above, every round", matrixKneeRow(c, 10000, 10000, 10000, 1), ">= 10000"},
		{"censored below, a round above the floor", below, "< 50 (below the floor to 120)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := kneeRangeText(tc.k); got != tc.want {
				t.Errorf("kneeRangeText = %q, want %q", got, tc.want)
			}
		})
	}
}
