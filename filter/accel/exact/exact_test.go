package exact

import (
	"strings"
	"testing"
)

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
		{`(?sm)^$`, "x\n", true}, // the empty line after the last newline
	}
	for _, tt := range tests {
		r, err := NewRE2(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		direct, err := NewDirect(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		for name, m := range map[string]Matcher{"go": NewGo(tt.expr), "re2": r, "confirm": NewConfirm(tt.expr), "direct": direct} {
			if got := m.MatchString(tt.value); got != tt.want {
				t.Errorf("%s %q on %q: %v, want %v", name, tt.expr, tt.value, got, tt.want)
			}
		}
	}
}

// NewDirect runs small programs with Go's regexp (Coraza's own engine, no
// wasm call) and big ones with RE2.
func TestNewDirectPicksTheEngineBySize(t *testing.T) {
	big := "(?sm)(?:" + strings.Repeat("[a-z]+x|", 40) + "y)"
	for expr, wantGo := range map[string]bool{`(?sm)^\s*$`: true, big: false} {
		m, err := NewDirect(expr)
		if err != nil {
			t.Fatal(err)
		}
		if _, isGo := m.(*Go); isGo != wantGo {
			t.Errorf("%.30q: %T, want Go's regexp %v", expr, m, wantGo)
		}
	}
}
