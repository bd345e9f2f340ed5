package multimatch

import (
	"slices"
	"testing"
)

func TestLiteralReportsEveryExpressionThatMayMatch(t *testing.T) {
	exprs := []string{`(?i)union\s+select`, `<script`, `\w+`, ``, `(?i)sleep\(`}
	l, err := NewLiteral(exprs)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Filtered(0) || l.Filtered(2) || l.Filtered(3) {
		t.Errorf("Filtered: %v %v %v, want true false false", l.Filtered(0), l.Filtered(2), l.Filtered(3))
	}
	tests := []struct {
		value string
		want  []int32
	}{
		{"hello", []int32{2}}, // \w+ has no fixed text: always reported
		{"1 UNION SELECT 2", []int32{0, 2}},
		{"<SCRIPT>", []int32{2}}, // <script is case-sensitive: folding only adds hits...
		{"<script> sleep(1)", []int32{1, 2, 4}},
		{"", []int32{2}},
	}
	var scratch []byte
	for _, tt := range tests {
		var hits []int32
		hits, scratch = l.MayMatch(tt.value, hits, scratch)
		if tt.value == "<SCRIPT>" {
			// ...so a folded prefilter may report it: both answers are sound.
			hits = slices.DeleteFunc(hits, func(h int32) bool { return h == 1 })
		}
		if !slices.Equal(hits, tt.want) {
			t.Errorf("MayMatch(%q) = %v, want %v", tt.value, hits, tt.want)
		}
	}
}

func TestBitset(t *testing.T) {
	b := NewBitset(130)
	for _, i := range []int{0, 63, 64, 129} {
		b.Set(i)
	}
	for i := 0; i < 130; i++ {
		if want := i == 0 || i == 63 || i == 64 || i == 129; b.Has(i) != want {
			t.Errorf("Has(%d) = %v", i, b.Has(i))
		}
	}
	b.Clear()
	if b.Has(64) {
		t.Error("Clear left 64")
	}
}
