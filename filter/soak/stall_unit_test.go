package soak

import (
	"strings"
	"testing"
)

func TestStallProblems(t *testing.T) {
	figures := func(alone, mixed float64) stallFigures {
		return stallFigures{GETAloneP99Ms: alone, GETMixedP99Ms: mixed, Ratio: mixed / alone}
	}
	control := figures(15, 730)
	tests := []struct {
		name               string
		offWorker, inPlace stallFigures
		want               []string // a substring of each problem, in order
	}{
		{"measured on the AMD machine", figures(13.9, 17.1), control, nil},
		{"a scheduler slice behind an inspection", figures(6, 17.9), control, nil},
		{"a partial stall", figures(6, 30), control, []string{"raise GET p99 5.00x"}},
		{"a stall as in place", figures(15, 700), control, []string{"raise GET p99 46.67x", "above 20% of the in-place control's 730.0 ms"}},
		{"a noisy baseline hiding a stall", figures(300, 500), control, []string{"above 20% of the in-place control's"}},
		{"a control that did not stall", figures(10, 12), figures(10, 40), []string{"control raised GET p99 only 4.0x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stallProblems(tt.offWorker, tt.inPlace)
			if len(got) != len(tt.want) {
				t.Fatalf("problems = %q, want %d", got, len(tt.want))
			}
			for i, want := range tt.want {
				if !strings.Contains(got[i], want) {
					t.Errorf("problem %d = %q, want it to say %q", i, got[i], want)
				}
			}
		})
	}
}
