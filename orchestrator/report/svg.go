package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
)

// svgDoc writes a standalone SVG document. Coordinates are printed with one
// decimal so the output is byte-for-byte deterministic; all text goes
// through XML escaping.
type svgDoc struct {
	buf bytes.Buffer
}

func newSVG(width, height int) *svgDoc {
	d := &svgDoc{}
	fmt.Fprintf(&d.buf, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	d.rect(0, 0, float64(width), float64(height), "#ffffff", "")
	return d
}

func (d *svgDoc) bytes() []byte {
	d.buf.WriteString("</svg>\n")
	return d.buf.Bytes()
}

// raw writes markup built only from constants and numbers.
func (d *svgDoc) raw(format string, args ...any) {
	fmt.Fprintf(&d.buf, format, args...)
	d.buf.WriteByte('\n')
}

func (d *svgDoc) rect(x, y, w, h float64, fill, extra string) {
	d.raw(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s/>`, num(x), num(y), num(w), num(h), fill, extra)
}

func (d *svgDoc) line(x1, y1, x2, y2 float64, stroke string, width float64, dash string) {
	d.raw(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`,
		num(x1), num(y1), num(x2), num(y2), stroke, num(width), dashAttr(dash))
}

// text writes escaped s; extra holds further constant attributes.
func (d *svgDoc) text(x, y float64, anchor, s, extra string) {
	d.raw(`<text x="%s" y="%s" text-anchor="%s"%s>%s</text>`, num(x), num(y), anchor, extra, esc(s))
}

func (d *svgDoc) polyline(pts []xy, stroke, dash string) {
	var b bytes.Buffer
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(num(p.x) + "," + num(p.y))
	}
	d.raw(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`, b.String(), stroke, dashAttr(dash))
}

func (d *svgDoc) circle(p xy, r float64, fill string) {
	d.raw(`<circle cx="%s" cy="%s" r="%s" fill="%s"/>`, num(p.x), num(p.y), num(r), fill)
}

type xy struct{ x, y float64 }

func dashAttr(dash string) string {
	if dash == "" {
		return ""
	}
	return ` stroke-dasharray="` + dash + `"`
}

func num(v float64) string {
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func esc(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s)) // writes to a buffer: cannot fail
	return b.String()
}

// palette gives series distinct colors, in order.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

func paletteColor(i int) string { return palette[i%len(palette)] }
