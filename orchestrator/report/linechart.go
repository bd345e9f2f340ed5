package report

import (
	"math"
)

// Point is one (x, y) sample; a NaN y is skipped (not measured).
type Point struct{ X, Y float64 }

// Series is one line of a LineChart.
type Series struct {
	Name   string
	Points []Point // drawn in the given order
	Color  string  // CSS color; empty picks from the palette by position
	Dashed bool
}

// Marker is a vertical line at X, e.g. a knee. When Series names a series
// of the chart, the marker takes its color.
type Marker struct {
	X      float64
	Label  string
	Series string
}

// LineChart is a multi-series x/y chart with axes starting at zero.
type LineChart struct {
	Title, XLabel, YLabel string
	Series                []Series
	Markers               []Marker
	Width, Height         int // pixels; 0 means 760 x 420
	// LogX and LogY draw that axis logarithmically (positive values only).
	LogX, LogY bool
}

const (
	marginLeft   = 70.0
	marginRight  = 190.0 // legend
	marginTop    = 40.0
	marginBottom = 55.0
)

// SVG renders the chart. A chart without any point says so instead of
// drawing empty axes.
func (c LineChart) SVG() []byte {
	w, h := c.size()
	d := newSVG(w, h)
	d.text(float64(w)/2, 22, "middle", c.Title, ` font-size="15" font-weight="bold"`)
	minX, maxX, minY, maxY, found := c.extent()
	if !found {
		d.text(float64(w)/2, float64(h)/2, "middle", "no data", ` fill="#777777"`)
		return d.bytes()
	}
	var x, y scale = newAxis(maxX, marginLeft, float64(w)-marginRight), newAxis(maxY, float64(h)-marginBottom, marginTop)
	if c.LogX && minX > 0 {
		x = newLogAxis(minX, maxX, marginLeft, float64(w)-marginRight)
	}
	if c.LogY && minY > 0 {
		y = newLogAxis(minY, maxY, float64(h)-marginBottom, marginTop)
	}
	c.drawAxes(d, x, y)
	colors := c.colors()
	for i, s := range c.Series {
		drawSeries(d, s, colors[i], x, y)
	}
	c.drawMarkers(d, x, y, colors)
	c.drawLegend(d, colors, float64(w)-marginRight+15)
	return d.bytes()
}

func (c LineChart) size() (int, int) {
	if c.Width > 0 && c.Height > 0 {
		return c.Width, c.Height
	}
	return 760, 420
}

// extent is the range of x (markers included) and y over the measured
// points; the minimums only count positive values (for log axes).
func (c LineChart) extent() (minX, maxX, minY, maxY float64, found bool) {
	minX, minY = math.Inf(1), math.Inf(1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			if math.IsNaN(p.Y) || math.IsNaN(p.X) {
				continue
			}
			maxX, maxY, found = math.Max(maxX, p.X), math.Max(maxY, p.Y), true
			if p.X > 0 {
				minX = math.Min(minX, p.X)
			}
			if p.Y > 0 {
				minY = math.Min(minY, p.Y)
			}
		}
	}
	for _, m := range c.Markers {
		maxX = math.Max(maxX, m.X)
		if m.X > 0 {
			minX = math.Min(minX, m.X)
		}
	}
	return minX, maxX, minY, maxY, found
}

// AutoLog switches an axis to a logarithmic scale when its positive values
// spread over more than 20 times: a sweep's rates and latencies often do.
func (c *LineChart) AutoLog() {
	const wide = 20
	if lo, hi := minMax(c.Series, true); logWorthy(lo, hi, wide) {
		c.LogX = true
	}
	if lo, hi := minMax(c.Series, false); logWorthy(lo, hi, wide) {
		c.LogY = true
	}
}

// minMax is the range of the positive, non-NaN values of a set of series.
func minMax(series []Series, ofX bool) (lo, hi float64) {
	lo = math.Inf(1)
	for _, s := range series {
		for _, p := range s.Points {
			v := p.Y
			if ofX {
				v = p.X
			}
			if v > 0 && !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	return lo, hi
}

func (c LineChart) colors() []string {
	colors := make([]string, len(c.Series))
	for i, s := range c.Series {
		colors[i] = s.Color
		if colors[i] == "" {
			colors[i] = paletteColor(i)
		}
	}
	return colors
}

func (c LineChart) drawAxes(d *svgDoc, xs, ys scale) {
	var x, y struct{ from, to float64 }
	x.from, x.to = xs.span()
	y.from, y.to = ys.span()
	for _, t := range ys.ticks() {
		py := ys.pos(t)
		d.line(x.from, py, x.to, py, "#e5e5e5", 1, "")
		d.text(x.from-6, py+4, "end", ys.label(t), "")
	}
	for _, t := range xs.ticks() {
		px := xs.pos(t)
		d.line(px, y.from, px, y.from+5, "#333333", 1, "")
		d.text(px, y.from+18, "middle", xs.label(t), "")
	}
	d.line(x.from, y.from, x.to, y.from, "#333333", 1, "")
	d.line(x.from, y.from, x.from, y.to, "#333333", 1, "")
	d.text((x.from+x.to)/2, y.from+40, "middle", c.XLabel, "")
	midY := (y.from + y.to) / 2
	d.raw(`<text x="%s" y="%s" text-anchor="middle" transform="rotate(-90 %s %s)">%s</text>`,
		num(18), num(midY), num(18), num(midY), esc(c.YLabel))
}

func drawSeries(d *svgDoc, s Series, color string, x, y scale) {
	var pts []xy
	for _, p := range s.Points {
		if !math.IsNaN(p.X) && !math.IsNaN(p.Y) {
			pts = append(pts, xy{x.pos(p.X), y.pos(p.Y)})
		}
	}
	dash := ""
	if s.Dashed {
		dash = "6 4"
	}
	if len(pts) > 1 {
		d.polyline(pts, color, dash)
	}
	for _, p := range pts {
		d.circle(p, 3, color)
	}
}

func (c LineChart) drawMarkers(d *svgDoc, x, y scale, colors []string) {
	xFrom, xTo := x.span()
	yFrom, yTo := y.span()
	for i, m := range c.Markers {
		color := "#555555"
		for j, s := range c.Series {
			if s.Name == m.Series {
				color = colors[j]
			}
		}
		px := x.pos(m.X)
		d.line(px, yFrom, px, yTo, color, 1.5, "3 3")
		// Labels go inside the plot (left of markers in its right half) and
		// are staggered so markers at nearby rates stay readable.
		lx, anchor := px+3, "start"
		if px > (xFrom+xTo)/2 {
			lx, anchor = px-3, "end"
		}
		d.text(lx, yTo+12+float64(i%4)*13, anchor, m.Label, ` font-size="10" fill="`+color+`"`)
	}
}

func (c LineChart) drawLegend(d *svgDoc, colors []string, left float64) {
	for i, s := range c.Series {
		py := marginTop + 10 + float64(i)*18
		dash := ""
		if s.Dashed {
			dash = "6 4"
		}
		d.line(left, py, left+22, py, colors[i], 2, dash)
		d.text(left+28, py+4, "start", s.Name, "")
	}
}
