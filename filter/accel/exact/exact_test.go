package exact

import "testing"

func TestEnginesAgree(t *testing.T) {
	tests := []struct {
		expr  string
		value string
		want  bool
	}{
		{`(?sm)(?i)union\s+select`, "1 UNION\tSELECT", true},
		{`(?sm)^id$`, "x\nid\ny", true},
		{`(?sm)a.b`, "a\xffb", true}, // an invalid byte is one character for Go
		{`(?sm)\bcat\b`, "bobcat", false},
		{`(?sm)(?i)kill`, "\u212Aill", true},
	}
	for _, tt := range tests {
		r, err := NewRE2(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		for name, m := range map[string]Matcher{"go": NewGo(tt.expr), "re2": r, "confirm": NewConfirm(tt.expr)} {
			if got := m.MatchString(tt.value); got != tt.want {
				t.Errorf("%s %q on %q: %v, want %v", name, tt.expr, tt.value, got, tt.want)
			}
		}
	}
}
