package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMixShape(t *testing.T) {
	s, err := ShapeByName("mix:get=60,json_1k=30,json_10k=10")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var weights []int
	for _, m := range s.Members {
		names, weights = append(names, m.Shape.Name), append(weights, m.Weight)
	}
	json1k, _ := ShapeByName(ShapeJSON1K)
	json10k, _ := ShapeByName(ShapeJSON10K)
	wantBytes := (30*json1k.Bytes + 10*json10k.Bytes) / 100
	if !slices.Equal(names, []string{ShapeGet, ShapeJSON1K, ShapeJSON10K}) || !slices.Equal(weights, []int{60, 30, 10}) ||
		s.Bytes != wantBytes || s.Method != "" || s.Body != nil || len(s.Members[2].Shape.Body) != json10k.Bytes {
		t.Errorf("mix %+v: members %v %v, bytes %d (want %d)", s, names, weights, s.Bytes, wantBytes)
	}
}

func TestMixRefusesWhatItCannotSend(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"mix:get=60", "two shapes or more"},
		{"mix:get=60,json_1k", `"json_1k" is not SHAPE=WEIGHT`},
		{"mix:get=60,json_1k=0", `"json_1k=0" is not SHAPE=WEIGHT`},
		{"mix:get=60,json_1k=1.5", "positive whole weight"},
		{"mix:get=60,xml_1k=40", `unknown shape "xml_1k"`},
		{"mix:get=60,get=40", "get is named twice"},
		{"mix:get=1,mix:json_1k=1", `unknown shape "mix:json_1k"`},
		{"mix:", "is not SHAPE=WEIGHT"},
	} {
		if _, err := ShapeByName(tc.name); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
		p := Default()
		p.Shapes = []string{tc.name}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("plan with %s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	p := Default()
	p.Shapes = []string{"mix:get=1,json_1k=1", ShapeGet}
	if err := p.Validate(); err != nil {
		t.Errorf("a plan with a mix and a plain shape: %v", err)
	}
	p.Shapes = []string{"mix:get=1,json_1k=1", "mix:get=1,json_1k=1"}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Errorf("a mix listed twice: %v", err)
	}
}

// Each member of a mix is connected as a plain shape at its rate, so a
// member of a small weight still has MinConnections, but no connection is
// left with fewer than two calls in the window.
func TestMemberConnections(t *testing.T) {
	p := Default() // 20 s windows, 64 connections at most
	for _, tc := range []struct {
		qps  float64
		want int
	}{
		{5, MinConnections},          // 100 calls: 4 connections of 25
		{0.3, 3},                     // 6 calls: 3 connections of 2
		{0.05, 1},                    // 1 call: one connection
		{600, 64},                    // 12,000 calls: capped by Connections
		{2 * CallsPerConnection, 40}, // 2,000 calls: 40 of 50
	} {
		if got := p.MemberConnections(tc.qps); got != tc.want {
			t.Errorf("MemberConnections(%v) = %d, want %d", tc.qps, got, tc.want)
		}
	}
}

func TestPathName(t *testing.T) {
	if got := PathName("mix:get=60,json_1k=40"); got != "mix-get60-json_1k40" {
		t.Errorf("PathName = %q", got)
	}
	if got := PathName(ShapeJSON10K); got != ShapeJSON10K {
		t.Errorf("PathName(%s) = %q", ShapeJSON10K, got)
	}
}

func TestReadMixFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	got, err := ReadMixFile(write("ok.mix", "# storefront\nget 60\n\njson_1k=30\n\tjson_10k\t10\n"))
	if err != nil || got != "mix:get=60,json_1k=30,json_10k=10" {
		t.Errorf("ReadMixFile = %q, %v", got, err)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"one.mix", "get 60\n", "two shapes or more"},
		{"bad.mix", "get 60\njson_1k 30 extra\n", `"json_1k=30=extra" is not SHAPE=WEIGHT`},
		{"unknown.mix", "get 1\nxml 1\n", `unknown shape "xml"`},
	} {
		if _, err := ReadMixFile(write(tc.name, tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: err = %v, want %q and the file's name", tc.name, err, tc.want)
		}
	}
	if _, err := ReadMixFile(filepath.Join(dir, "missing.mix")); err == nil {
		t.Error("a missing mix file was accepted")
	}
}
