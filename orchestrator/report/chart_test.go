package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
)

// parsedSVG is what an XML decoder sees in a document.
type parsedSVG struct {
	root     string
	elements map[string]int
	texts    []string
}

func parseSVG(t *testing.T, data []byte) parsedSVG {
	t.Helper()
	p := parsedSVG{elements: map[string]int{}}
	dec := xml.NewDecoder(bytes.NewReader(data))
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, data)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				p.root = el.Name.Local
			}
			depth++
			p.elements[el.Name.Local]++
		case xml.EndElement:
			depth--
		case xml.CharData:
			if s := strings.TrimSpace(string(el)); s != "" {
				p.texts = append(p.texts, s)
			}
		}
	}
	if p.root != "svg" || depth != 0 {
		t.Fatalf("root %q, unbalanced depth %d", p.root, depth)
	}
	return p
}

func (p parsedSVG) hasText(s string) bool {
	for _, t := range p.texts {
		if t == s {
			return true
		}
	}
	return false
}

func TestLineChartSVG(t *testing.T) {
	chart := LineChart{
		Title: `Achieved <full-crs> & "json"`, XLabel: "target RPS", YLabel: "achieved RPS",
		Series: []Series{
			{Name: "envoy", Points: []Point{{1000, 1000}, {2000, 1990}, {3000, math.NaN()}, {4000, 3980}}},
			{Name: "waf", Points: []Point{{1000, 995}}, Dashed: true},
		},
		Markers: []Marker{{X: 2500, Label: "waf knee 2500", Series: "waf"}},
	}
	svg := chart.SVG()
	p := parseSVG(t, svg)
	for _, want := range []string{`Achieved <full-crs> & "json"`, "envoy", "waf", "waf knee 2500", "target RPS", "achieved RPS", "4000"} {
		if !p.hasText(want) {
			t.Errorf("text %q missing; texts: %q", want, p.texts)
		}
	}
	// One line for envoy (the single waf point draws no line), 3 + 1 dots
	// (the NaN point is skipped).
	if p.elements["polyline"] != 1 || p.elements["circle"] != 4 {
		t.Errorf("%d polylines, %d circles", p.elements["polyline"], p.elements["circle"])
	}
	if !bytes.Contains(svg, []byte(`stroke="#d62728" stroke-width="1.5" stroke-dasharray="3 3"`)) {
		t.Errorf("knee marker does not take the color of its series")
	}
	if !bytes.Equal(svg, chart.SVG()) {
		t.Error("two renders differ")
	}
}

func TestLineChartWithoutData(t *testing.T) {
	for _, chart := range []LineChart{
		{Title: "empty"},
		{Title: "only NaN", Series: []Series{{Name: "a", Points: []Point{{1000, math.NaN()}}}}},
	} {
		p := parseSVG(t, chart.SVG())
		if !p.hasText("no data") || p.elements["polyline"] != 0 {
			t.Errorf("%s: texts %q", chart.Title, p.texts)
		}
	}
}

func TestHeatmapSVG(t *testing.T) {
	h := Heatmap{
		Title:     "Knee RPS: waf",
		RowLabels: []string{"headers-only", "full-crs"},
		ColLabels: []string{"get", "json_1k"},
		Values:    [][]float64{{8000, 6000}, {4000, math.NaN()}},
		Unit:      "RPS",
	}
	svg := h.SVG()
	p := parseSVG(t, svg)
	for _, want := range []string{"Knee RPS: waf", "headers-only", "json_1k", "8000", "4000", "n/a", "RPS"} {
		if !p.hasText(want) {
			t.Errorf("text %q missing; texts: %q", want, p.texts)
		}
	}
	for _, fill := range []string{`fill="#08306b" stroke`, `fill="#f7fbff" stroke`, `fill="#eeeeee" stroke`} {
		if !bytes.Contains(svg, []byte(fill)) {
			t.Errorf("no cell with %s (max, min, missing)", fill)
		}
	}
	// A shared scale changes the colors: 8000 is no longer the darkest.
	h.ScaleMin, h.ScaleMax = 0, 16000
	if bytes.Contains(h.SVG(), []byte(`fill="#08306b" stroke`)) {
		t.Error("ScaleMax was ignored")
	}
}

func TestHeatmapWithoutData(t *testing.T) {
	p := parseSVG(t, Heatmap{Title: "none"}.SVG())
	if !p.hasText("no data") {
		t.Errorf("texts %q", p.texts)
	}
}

func TestAxis(t *testing.T) {
	tests := []struct {
		hi        float64
		wantTicks []float64
		wantLabel string // of the second tick
	}{
		{10000, []float64{0, 2000, 4000, 6000, 8000, 10000}, "2000"},
		{9100, []float64{0, 2000, 4000, 6000, 8000, 10000}, "2000"},
		{0.37, []float64{0, 0.1, 0.2, 0.30000000000000004, 0.4}, "0.1"},
		{3.2, []float64{0, 1, 2, 3, 4}, "1"},
		{0, []float64{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}, "0.2"},
	}
	for _, tt := range tests {
		a := newAxis(tt.hi, 0, 100)
		if got := a.ticks(); !reflect.DeepEqual(got, tt.wantTicks) {
			t.Errorf("newAxis(%g).ticks() = %v, want %v", tt.hi, got, tt.wantTicks)
		}
		if got := a.label(a.ticks()[1]); got != tt.wantLabel {
			t.Errorf("newAxis(%g) label = %q, want %q", tt.hi, got, tt.wantLabel)
		}
		if a.pos(0) != 0 || a.pos(a.max) != 100 {
			t.Errorf("newAxis(%g) maps [0, %g] to [%g, %g]", tt.hi, a.max, a.pos(0), a.pos(a.max))
		}
	}
}

func TestAutoLogAxes(t *testing.T) {
	wide := LineChart{Series: []Series{{Name: "a", Points: []Point{{50, 48}, {1000, 990}, {10000, 9800}}}}}
	wide.AutoLog()
	narrow := LineChart{Series: []Series{{Name: "a", Points: []Point{{1000, 990}, {4000, 3990}}}}}
	narrow.AutoLog()
	if !wide.LogX || !wide.LogY || narrow.LogX || narrow.LogY {
		t.Fatalf("wide %v/%v narrow %v/%v", wide.LogX, wide.LogY, narrow.LogX, narrow.LogY)
	}
	a := newLogAxis(50, 10000, 0, 300)
	if a.lo != 10 || a.hi != 10000 || a.pos(10) != 0 || a.pos(10000) != 300 || math.Abs(a.pos(100)-100) > 1e-9 {
		t.Fatalf("log axis %+v pos(100)=%v", a, a.pos(100))
	}
	ticks := a.ticks()
	if ticks[0] != 10 || ticks[len(ticks)-1] != 10000 || len(ticks) != 10 {
		t.Fatalf("ticks %v", ticks)
	}
	if svg := parseSVG(t, wide.SVG()); svg.root != "svg" {
		t.Fatalf("root %q", svg.root)
	}
}
