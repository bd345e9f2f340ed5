package dataset

import (
	"math"
	"testing"
)

func TestFormatFloatRoundsToSignificantDigits(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{4.111180253059536, "4.11118"},
		{10023.456, "10023.5"},
		{51.0, "51"},
		{0.000123456789, "0.000123457"},
		{-1.5, "-1.5"},
		{123456789, "123456789"},
		{0, "0"},
		{math.NaN(), ""},
	}
	for _, tt := range tests {
		got := formatFloat(tt.v)
		if got != tt.want {
			t.Errorf("formatFloat(%v) = %q, want %q", tt.v, got, tt.want)
		}
		if back, err := parseFloat(got); err != nil || (!math.IsNaN(tt.v) && math.Abs(back-tt.v) > math.Abs(tt.v)*5e-6) {
			t.Errorf("parseFloat(%q) = %v, %v: not within rounding of %v", got, back, err, tt.v)
		}
	}
}
