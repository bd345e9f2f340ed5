package report

import (
	"fmt"
	"math"
	"strconv"
)

// Heatmap is a rows x cols grid of values colored on a light-to-dark scale.
type Heatmap struct {
	Title                string
	RowLabels, ColLabels []string
	Values               [][]float64 // [row][col]; NaN: no value
	Texts                [][]string  // optional cell text, same shape; default: the value
	Unit                 string      // shown next to the color scale
	// ScaleMin and ScaleMax fix the color scale (share it between heatmaps
	// that are compared); when ScaleMax <= ScaleMin the values' range is used.
	ScaleMin, ScaleMax float64
}

const (
	cellW, cellH   = 120.0, 44.0
	heatLeft       = 150.0
	heatTop        = 70.0
	scaleBarHeight = 12.0
)

// Scale ends (light to dark blue) and the color of empty cells.
var (
	scaleLow  = [3]float64{0xf7, 0xfb, 0xff}
	scaleHigh = [3]float64{0x08, 0x30, 0x6b}
)

// SVG renders the heatmap. Cells without a value are grey.
func (h Heatmap) SVG() []byte {
	rows, cols := len(h.RowLabels), len(h.ColLabels)
	width := int(heatLeft + cellW*float64(max(cols, 1)) + 30)
	height := int(heatTop + cellH*float64(max(rows, 1)) + 80)
	d := newSVG(width, height)
	d.text(float64(width)/2, 24, "middle", h.Title, ` font-size="15" font-weight="bold"`)
	lo, hi, ok := h.valueRange()
	if h.ScaleMax > h.ScaleMin {
		lo, hi = h.ScaleMin, h.ScaleMax
	}
	if rows == 0 || cols == 0 || (!ok && h.Texts == nil) {
		d.text(float64(width)/2, heatTop+20, "middle", "no data", ` fill="#777777"`)
		return d.bytes()
	}
	for c, label := range h.ColLabels {
		d.text(heatLeft+cellW*(float64(c)+0.5), heatTop-10, "middle", label, "")
	}
	for r, label := range h.RowLabels {
		d.text(heatLeft-10, heatTop+cellH*(float64(r)+0.5)+4, "end", label, "")
		for c := range h.ColLabels {
			h.drawCell(d, r, c, lo, hi)
		}
	}
	if ok {
		drawScale(d, lo, hi, h.Unit, heatTop+cellH*float64(rows)+25)
	}
	return d.bytes()
}

func (h Heatmap) value(r, c int) float64 {
	if r < len(h.Values) && c < len(h.Values[r]) {
		return h.Values[r][c]
	}
	return math.NaN()
}

func (h Heatmap) cellText(r, c int) string {
	if r < len(h.Texts) && c < len(h.Texts[r]) {
		return h.Texts[r][c]
	}
	if v := h.value(r, c); !math.IsNaN(v) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return "n/a"
}

func (h Heatmap) valueRange() (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, row := range h.Values {
		for _, v := range row {
			if !math.IsNaN(v) {
				lo, hi, ok = math.Min(lo, v), math.Max(hi, v), true
			}
		}
	}
	return lo, hi, ok
}

func (h Heatmap) drawCell(d *svgDoc, r, c int, lo, hi float64) {
	x, y := heatLeft+cellW*float64(c), heatTop+cellH*float64(r)
	fill, ink := "#eeeeee", "#333333"
	if v := h.value(r, c); !math.IsNaN(v) {
		t := 1.0 // a single value gets the darkest color
		if hi > lo {
			t = (v - lo) / (hi - lo)
		}
		fill = scaleColor(t)
		if t > 0.55 {
			ink = "#ffffff"
		}
	}
	d.rect(x, y, cellW, cellH, fill, ` stroke="#ffffff" stroke-width="2"`)
	d.text(x+cellW/2, y+cellH/2+4, "middle", h.cellText(r, c), ` fill="`+ink+`"`)
}

// scaleColor interpolates the scale at t in [0, 1].
func scaleColor(t float64) string {
	t = math.Max(0, math.Min(1, t))
	var rgb [3]int
	for i := range rgb {
		rgb[i] = int(math.Round(scaleLow[i] + (scaleHigh[i]-scaleLow[i])*t))
	}
	return fmt.Sprintf("#%02x%02x%02x", rgb[0], rgb[1], rgb[2])
}

// drawScale draws the color scale as ten swatches from lo to hi.
func drawScale(d *svgDoc, lo, hi float64, unit string, top float64) {
	const swatches, swatchW = 10, 20.0
	for i := range swatches {
		d.rect(heatLeft+float64(i)*swatchW, top, swatchW, scaleBarHeight, scaleColor(float64(i)/(swatches-1)), "")
	}
	d.text(heatLeft, top+scaleBarHeight+14, "start", strconv.FormatFloat(lo, 'f', -1, 64), "")
	d.text(heatLeft+swatches*swatchW, top+scaleBarHeight+14, "end", strconv.FormatFloat(hi, 'f', -1, 64), "")
	d.text(heatLeft+swatches*swatchW+10, top+scaleBarHeight-1, "start", unit, "")
}
