package report

import (
	"math"
	"strconv"
)

// scale maps data values onto pixels and says where its ticks go.
type scale interface {
	pos(v float64) float64
	span() (from, to float64) // pixels of the axis' ends
	ticks() []float64
	label(v float64) string
}

// axis maps data values in [0, max] onto pixels, with round tick values.
type axis struct {
	max, step float64 // data range [0, max]; ticks every step
	from, to  float64 // pixels of 0 and max
}

// newAxis covers [0, hi] with about five ticks at 1, 2 or 5 times a power of
// ten; an empty range still gets a unit axis.
func newAxis(hi, from, to float64) axis {
	if !(hi > 0) || math.IsInf(hi, 0) {
		hi = 1
	}
	step := niceStep(hi / 5)
	return axis{max: math.Ceil(hi/step-1e-9) * step, step: step, from: from, to: to}
}

func niceStep(raw float64) float64 {
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5} {
		if raw <= m*pow*(1+1e-9) {
			return m * pow
		}
	}
	return 10 * pow
}

func (a axis) span() (float64, float64) { return a.from, a.to }

func (a axis) pos(v float64) float64 {
	return a.from + (a.to-a.from)*v/a.max
}

func (a axis) ticks() []float64 {
	var ts []float64
	n := int(math.Round(a.max / a.step))
	for i := 0; i <= n; i++ {
		ts = append(ts, float64(i)*a.step)
	}
	return ts
}

// label prints a tick with as many decimals as its step needs.
func (a axis) label(v float64) string {
	decimals := 0
	if a.step < 1 {
		decimals = int(math.Ceil(-math.Log10(a.step) - 1e-9))
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// logAxis maps [lo, hi] (whole decades) onto pixels logarithmically. A sweep
// spans knees from tens of RPS (full CRS on large bodies) to thousands
// (vanilla Envoy): on a linear axis the slow configurations are a flat line.
type logAxis struct {
	lo, hi   float64
	from, to float64
}

// newLogAxis covers [min, max] with whole decades.
func newLogAxis(min, max, from, to float64) logAxis {
	lo := math.Pow(10, math.Floor(math.Log10(min)))
	hi := math.Pow(10, math.Ceil(math.Log10(max)))
	if hi <= lo {
		hi = lo * 10
	}
	return logAxis{lo: lo, hi: hi, from: from, to: to}
}

func (a logAxis) span() (float64, float64) { return a.from, a.to }

func (a logAxis) pos(v float64) float64 {
	v = math.Max(v, a.lo)
	return a.from + (a.to-a.from)*math.Log10(v/a.lo)/math.Log10(a.hi/a.lo)
}

// ticks are 1, 2 and 5 times each power of ten in range.
func (a logAxis) ticks() []float64 {
	var ts []float64
	for decade := a.lo; decade <= a.hi*(1+1e-9); decade *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if t := m * decade; t <= a.hi*(1+1e-9) {
				ts = append(ts, t)
			}
		}
	}
	return ts
}

func (a logAxis) label(v float64) string {
	decimals := 0
	if v < 1 {
		decimals = int(math.Ceil(-math.Log10(v) - 1e-9))
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// logWorthy says whether positive values spread over more than wide times
// call for a logarithmic axis.
func logWorthy(min, max, wide float64) bool {
	return min > 0 && max/min > wide
}
