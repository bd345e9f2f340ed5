package plugin

import (
	"slices"
	"strings"
	"testing"
)

func TestHonestChainReplacesOnlyMisreportingSteps(t *testing.T) {
	for _, c := range []struct {
		chain, want []string
	}{
		{nil, nil},
		{[]string{"urlDecodeUni", "lowercase"}, []string{"urlDecodeUni", "lowercase"}},
		{[]string{"urlDecodeUni", "htmlEntityDecode", "jsDecode"}, []string{"urlDecodeUni", HonestHTMLEntityDecode, "jsDecode"}},
		{[]string{"HTMLENTITYDECODE", "removeWhitespace"}, []string{HonestHTMLEntityDecode, HonestRemoveWhitespace}},
	} {
		chain := slices.Clone(c.chain)
		if got := HonestChain(chain); !slices.Equal(got, c.want) {
			t.Errorf("HonestChain(%q) = %q, want %q", c.chain, got, c.want)
		}
		if !slices.Equal(chain, c.chain) {
			t.Errorf("HonestChain(%q) changed its argument to %q", c.chain, chain)
		}
	}
}

// The twins' outputs are checked against Coraza's own transformations in
// package accel (TestHonestTwinsReproduceCoraza); here, their reports.
func TestHonestTwinsReportEveryChange(t *testing.T) {
	for _, c := range []struct {
		name  string
		f     func(string) (string, bool, error)
		in    string
		out   string
		moved bool
	}{
		// Nine bytes shorter, nine longer: Coraza reports no change.
		{"entities of the same length", htmlEntityDecode, "&apos;&#97;&nGt;&nGt;&nGt;&nGt;&nGt;&nGt;&nGt;&nGt;&nGt;", "'a" + strings.Repeat("\u226b\u20d2", 9), true},
		{"no entity", htmlEntityDecode, "a<b", "a<b", false},
		{"invalid UTF-8", removeWhitespace, "a\xffb", "a\uFFFDb", true},
		{"a space", removeWhitespace, "a b", "ab", true},
		{"nothing to remove", removeWhitespace, "a\uFFFDb", "a\uFFFDb", false},
	} {
		out, moved, err := c.f(c.in)
		if out != c.out || moved != c.moved || err != nil {
			t.Errorf("%s: %q -> %q, %v, %v; want %q, %v, nil", c.name, c.in, out, moved, err, c.out, c.moved)
		}
	}
}
