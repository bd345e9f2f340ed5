package report

import (
	"math"
	"strconv"
)

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
