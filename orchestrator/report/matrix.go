package report

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/wafsweep/wafsweep/orchestrator/dataset"
	"github.com/wafsweep/wafsweep/orchestrator/plan"
)

// A matrix measured in slices (results/README.md says why): sweeps of one
// shape each, named FAMILY-SHAPE, where a family is the flavors and tiers
// its slices share. matrixTables sets them side by side, one column per
// shape, so that a reader sees the whole matrix at once without merging
// sweeps that ran on different machines: each family opens with a row
// naming the machine of each of its slices, and rows compare only within
// a column of one family.

// matrixSlice is one sweep of a matrix, read for its tables.
type matrixSlice struct {
	path, family, shape string
	meta                dataset.Metadata
	summary             []dataset.KneeRow    // all-rounds rows
	slo                 []dataset.SLOKneeRow // all-rounds rows
}

// matrixFamily is the slices that share flavors and tiers, by shape, and
// the configurations (flavor and tier) their rows show.
type matrixFamily struct {
	name    string
	byShape map[string]matrixSlice
	configs []matrixConfig
}

// matrixConfig is a row of a family: one flavor and tier over every shape.
type matrixConfig struct{ flavor, tier string }

func (c matrixConfig) String() string {
	if c.tier == plan.TierNone {
		return c.flavor
	}
	return c.flavor + "/" + c.tier
}

// matrixTables renders the kind "matrix": for the slices named, tables of
// the capacity knee, the cores per 1k RPS there, and the highest rate
// within each p99 objective the slices searched.
func matrixTables(dir string, datasets []string) ([]byte, error) {
	families, shapes, err := readMatrix(dir, datasets)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	var knees []dataset.KneeRow
	var sloRows []dataset.SLOKneeRow
	b.WriteString("**Capacity knee (RPS; median of the rounds, their range where they differ)**\n\n")
	writeMatrix(&b, families, shapes, func(s matrixSlice, c matrixConfig) string {
		k, ok := matrixKnee(s, c)
		if !ok {
			return "n/a"
		}
		knees = append(knees, k)
		return kneeRangeText(k)
	})
	writeTableEnd(&b, knees)
	b.WriteString("\n**Proxy cores per 1k RPS at the capacity knee** (at the ladder's top for a knee above it)\n\n")
	writeMatrix(&b, families, shapes, func(s matrixSlice, c matrixConfig) string {
		if k, ok := matrixKnee(s, c); ok && !k.Invalid {
			return fmtNum(k.CoresPer1kAtKnee, 2)
		}
		return "n/a"
	})
	for _, o := range matrixObjectives(families) {
		fmt.Fprintf(&b, "\n**Highest rate with p99 <= %s ms (RPS)**\n\n", fmtNum(o, 0))
		writeMatrix(&b, families, shapes, func(s matrixSlice, c matrixConfig) string {
			r, ok := findSLORow(s.slo, matrixConfigID(c, s.shape), o)
			switch {
			case !ok:
				return "n/a"
			case r.KneeRPS == 0:
				return "< floor"
			}
			sloRows = append(sloRows, r)
			return sloRateText(r, censoredAbove(s.summary, r.ConfigID))
		})
	}
	for _, note := range sloMarkNotes(sloRows) {
		b.WriteString("\n" + note + "\n")
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// writeMatrix writes one table: per family a row of its slices' machines,
// each linked to its slice, then a row per configuration with cell's text
// for each shape. A shape the family has no slice of reads "not measured".
func writeMatrix(b *bytes.Buffer, families []matrixFamily, shapes []string, cell func(matrixSlice, matrixConfig) string) {
	writeTableHeader(b, append([]string{"Slices", "Config"}, shapes...))
	for _, f := range families {
		machines := []string{"`" + f.name + "-<shape>`", "machine"}
		for _, shape := range shapes {
			s, ok := f.byShape[shape]
			if !ok {
				machines = append(machines, "not measured")
				continue
			}
			machines = append(machines, fmt.Sprintf("[%s](%s)", mdText(orUnknown(s.meta.CPUModel)), s.path))
		}
		writeTableRow(b, machines)
		for _, c := range f.configs {
			row := []string{"", "`" + c.String() + "`"}
			for _, shape := range shapes {
				s, ok := f.byShape[shape]
				if !ok {
					row = append(row, "not measured")
					continue
				}
				row = append(row, cell(s, c))
			}
			writeTableRow(b, row)
		}
	}
}

// readMatrix reads the slices and groups them into families, in the order
// the datasets first name each family, and lists their shapes in the
// plan's order.
func readMatrix(dir string, datasets []string) ([]matrixFamily, []string, error) {
	var families []matrixFamily
	index := map[string]int{}
	seenShapes := map[string]bool{}
	for _, d := range datasets {
		s, err := readMatrixSlice(dir, d)
		if err != nil {
			return nil, nil, err
		}
		i, ok := index[s.family]
		if !ok {
			i = len(families)
			index[s.family] = i
			families = append(families, matrixFamily{name: s.family, byShape: map[string]matrixSlice{}})
		}
		f := &families[i]
		if other, dup := f.byShape[s.shape]; dup {
			return nil, nil, fmt.Errorf("%s and %s are both the %s slice of %s", other.path, d, s.shape, s.family)
		}
		f.byShape[s.shape] = s
		seenShapes[s.shape] = true
	}
	for i := range families {
		families[i].configs = familyConfigs(families[i])
	}
	return families, canonical(seenShapes, plan.Shapes()), nil
}

// readMatrixSlice reads a sweep of one shape named FAMILY-SHAPE.
func readMatrixSlice(dir, path string) (matrixSlice, error) {
	sw, err := dataset.ReadSweep(filepath.Join(dir, path))
	if err != nil {
		return matrixSlice{}, err
	}
	if len(sw.Meta.Plan.Shapes) != 1 {
		return matrixSlice{}, fmt.Errorf("%s: a matrix slice has one shape, this sweep has %d (%s)",
			path, len(sw.Meta.Plan.Shapes), strings.Join(sw.Meta.Plan.Shapes, ", "))
	}
	shape := sw.Meta.Plan.Shapes[0]
	family, ok := strings.CutSuffix(filepath.Base(path), "-"+shape)
	if !ok || family == "" {
		return matrixSlice{}, fmt.Errorf("%s: a matrix slice is named FAMILY-SHAPE, and this one's shape is %s", path, shape)
	}
	return matrixSlice{path: path, family: family, shape: shape, meta: sw.Meta,
		summary: summaryKnees(sw.Knees), slo: aggregateSLORows(sw.SLOKnees)}, nil
}

// familyConfigs lists the flavors and tiers a family's slices measured,
// in the report's order of configurations.
func familyConfigs(f matrixFamily) []matrixConfig {
	var rows []dataset.KneeRow
	for _, s := range f.byShape {
		rows = append(rows, s.summary...)
	}
	sortByConfig(rows, flavorOrder(nil, rows))
	return distinct(rows, func(k dataset.KneeRow) matrixConfig { return matrixConfig{k.Flavor, k.Tier} })
}

// matrixObjectives lists every p99 objective any slice searched, tightest
// first.
func matrixObjectives(families []matrixFamily) []float64 {
	var rows []dataset.SLOKneeRow
	for _, f := range families {
		for _, s := range f.byShape {
			rows = append(rows, s.slo...)
		}
	}
	return sloObjectives(rows)
}

func matrixConfigID(c matrixConfig, shape string) string {
	return plan.Config{Flavor: c.flavor, Tier: c.tier, Shape: shape}.ID()
}

// matrixKnee is the slice's all-rounds knee of the configuration.
func matrixKnee(s matrixSlice, c matrixConfig) (dataset.KneeRow, bool) {
	return findSummary(s.summary, c.flavor, c.tier, s.shape)
}

// kneeRangeText is kneeText with the rounds' range where they differ:
// "630 (600-660)", "630 (600-660) ‡". A censored median keeps it too, or
// it would hide a round far below: ">= 10000 (5250 to >= 10000)" when one
// round of three found 5,250 and two passed the ladder's top.
func kneeRangeText(k dataset.KneeRow) string {
	text := kneeText(k)
	if k.Invalid || k.Rounds <= 1 || k.KneeMinRPS == k.KneeMaxRPS || math.IsNaN(k.KneeMinRPS) {
		return text
	}
	mark := contestedSuffix(k)
	text = strings.TrimSuffix(text, mark)
	if k.Censored == dataset.CensoredNone {
		return text + " (" + fmtNum(k.KneeMinRPS, 0) + "-" + fmtNum(k.KneeMaxRPS, 0) + ")" + mark
	}
	return text + " (" + roundKneeText(k, k.KneeMinRPS) + " to " + roundKneeText(k, k.KneeMaxRPS) + ")" + mark
}

// roundKneeText writes one round's knee, the lowest or the highest of a
// censored aggregate k: a round censored above holds the ladder's top (k's
// bound), one censored below 0.
func roundKneeText(k dataset.KneeRow, knee float64) string {
	switch {
	case k.Censored == dataset.CensoredAbove && k.BoundRPS > 0 && int(knee) >= k.BoundRPS:
		return ">= " + fmtNum(knee, 0)
	case knee <= 0:
		return "below the floor"
	}
	return fmtNum(knee, 0)
}
