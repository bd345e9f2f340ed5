// Package compare sets two sweeps side by side, configuration by
// configuration: the knee and its cost in each, the difference, and
// whether that difference is larger than the rounds' own spread, which is
// what says whether a change (a rebuild, another machine) moved anything.
package compare

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
)

// Row compares one configuration present in both sweeps.
type Row struct {
	ConfigID                 string
	KneeA, KneeB             int
	SpreadA, SpreadB         [2]float64 // min and max knee over each sweep's rounds
	RoundsA, RoundsB         int
	CoresPer1kA, CoresPer1kB float64
	// Significant is true when the two sweeps' knee ranges over their
	// rounds do not overlap; it needs at least two rounds on each side.
	Significant bool
	// Verdict says so in words: "beyond spread", "within spread" or
	// "no spread" (a single round on a side).
	Verdict string
}

// Difference is KneeB - KneeA, and its share of KneeA.
func (r Row) Difference() (rps int, share float64) {
	d := r.KneeB - r.KneeA
	if r.KneeA == 0 {
		return d, math.NaN()
	}
	return d, float64(d) / float64(r.KneeA)
}

// Dirs reads knees.csv of two sweep directories and compares them.
func Dirs(a, b string) ([]Row, error) {
	ka, err := dataset.ReadKnees(filepath.Join(a, dataset.KneesFile))
	if err != nil {
		return nil, err
	}
	kb, err := dataset.ReadKnees(filepath.Join(b, dataset.KneesFile))
	if err != nil {
		return nil, err
	}
	return Knees(ka, kb), nil
}

// Knees compares the aggregate rows of two knees.csv, in A's order, for
// the configurations both hold and both found a knee for.
func Knees(a, b []dataset.KneeRow) []Row {
	inB := map[string]dataset.KneeRow{}
	for _, k := range b {
		if k.Round == dataset.AllRounds {
			inB[k.ConfigID] = k
		}
	}
	var rows []Row
	for _, ka := range a {
		kb, ok := inB[ka.ConfigID]
		if ka.Round != dataset.AllRounds || !ok || ka.Invalid || kb.Invalid {
			continue
		}
		rows = append(rows, row(ka, kb))
	}
	return rows
}

func row(a, b dataset.KneeRow) Row {
	r := Row{
		ConfigID: a.ConfigID, KneeA: a.KneeRPS, KneeB: b.KneeRPS, RoundsA: a.Rounds, RoundsB: b.Rounds,
		SpreadA: spread(a), SpreadB: spread(b), CoresPer1kA: a.CoresPer1kAtKnee, CoresPer1kB: b.CoresPer1kAtKnee,
	}
	switch {
	case a.Rounds < 2 || b.Rounds < 2:
		r.Verdict = "no spread"
	case r.SpreadA[1] < r.SpreadB[0] || r.SpreadB[1] < r.SpreadA[0]:
		r.Significant, r.Verdict = true, "beyond spread"
	default:
		r.Verdict = "within spread"
	}
	return r
}

func spread(k dataset.KneeRow) [2]float64 {
	if math.IsNaN(k.KneeMinRPS) || math.IsNaN(k.KneeMaxRPS) {
		return [2]float64{float64(k.KneeRPS), float64(k.KneeRPS)}
	}
	return [2]float64{k.KneeMinRPS, k.KneeMaxRPS}
}

// WriteMarkdown writes the comparison as a table.
func WriteMarkdown(w io.Writer, nameA, nameB string, rows []Row) error {
	if _, err := fmt.Fprintf(w, "| Config | Knee A (%s) | Knee B (%s) | B - A | Spread A | Spread B | Cores/1k A | Cores/1k B | |\n"+
		"|---|---|---|---|---|---|---|---|---|\n", nameA, nameB); err != nil {
		return err
	}
	for _, r := range rows {
		d, share := r.Difference()
		if _, err := fmt.Fprintf(w, "| `%s` | %d | %d | %+d (%s) | %s | %s | %s | %s | %s |\n",
			r.ConfigID, r.KneeA, r.KneeB, d, percent(share), rangeText(r.SpreadA, r.RoundsA), rangeText(r.SpreadB, r.RoundsB),
			num(r.CoresPer1kA), num(r.CoresPer1kB), r.Verdict); err != nil {
			return err
		}
	}
	return nil
}

func percent(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*v)
}

func rangeText(s [2]float64, rounds int) string {
	return fmt.Sprintf("%.0f-%.0f (%d rounds)", s[0], s[1], rounds)
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}
