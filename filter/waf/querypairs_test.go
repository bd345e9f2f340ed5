package waf

import (
	"slices"
	"testing"
)

func TestInjectedPairsAreThoseWhoseNameBreaksOut(t *testing.T) {
	tests := []struct {
		target string
		want   []string
	}{
		{"/products", nil},
		{"/products?", nil},
		{"/products?page=2&sort=-price&filter[status]=open&fields.user=a&$top=5&utm_source=x", nil},
		{"/search?q=online%3Dyes&callback=onLoad", nil},   // an '=' in a value is the value's
		{"/?%20%20onthisisaverylongword%20=vardata", nil}, // spaces alone: CRS's negative test 941120-8
		{"/?%22onfocus=YWxlcnQoMSk=", []string{"%22onfocus=YWxlcnQoMSk="}},
		{`/?"onfocus=alert(1)`, []string{`"onfocus=alert(1)`}},
		{"/?a=1&'onload=prompt(1)&b=2", []string{"'onload=prompt(1)"}},
		{"/?%3Csvg/onload=1", []string{"%3Csvg/onload=1"}},
		{"/?x%60y=1&a(b=2&c;d=3&e%5Cf=4", []string{"x%60y=1", "a(b=2", "c;d=3", "e%5Cf=4"}},
		{"/?bad%zz=1", nil},         // undecodable: read as sent
		{"/?=1", nil},               // no name at all
		{"/?flag&%22on", nil},       // no '=': the name is all there is (ARGS_NAMES)
		{"/?x=1#%22onfocus=2", nil}, // a fragment is no argument
		{"/a?%22onfocus=1?x", []string{"%22onfocus=1?x"}},
	}
	for _, tt := range tests {
		var got []string
		injectedPairs(tt.target, func(p string) { got = append(got, p) })
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: pairs %q, want %q", tt.target, got, tt.want)
		}
	}
}

// A payload that spans the '=' ending a parameter's name is blocked: CRS
// sees it whole in the query pair (941120 reads every request header),
// where its halves alone, the name in ARGS_NAMES and the value in ARGS,
// pass. Its twin, the same value under an identifier, passes; so does a
// benign value with an '=' in it, which joining every pair would block.
func TestPayloadsSpanningANamesEqualsAreBlocked(t *testing.T) {
	cfg := tierConfig(t, "full-crs")
	e := mustEngine(t, cfg)
	tests := []struct {
		name, target string
		block        bool
	}{
		{"event handler in the name, base64 script as the value", "/?%22onfocus=YWxlcnQoMSk=", true},
		{"the same, quote sent raw", `/?"onmouseover=YWxlcnQoMSk=`, true},
		{"its twin under an identifier", "/?focus=YWxlcnQoMSk=", false},
		{"a value with an '=' in it", "/api/orders?callback=online%3Dused&to=Java%27s+billing", false},
		{"CRS's negative test 941120-8", "/get?%20%20onthisisaverylongwordthathasmorethanfiftycharacters%20=vardata", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _, out := run(t, cfg, e, get(tt.target), nil, 0)
			if blocked := d.Action == Reply; blocked != tt.block {
				t.Fatalf("%s: blocked %v, want %v (decision %+v, outcome %+v)", tt.target, blocked, tt.block, d, out)
			}
		})
	}
}
