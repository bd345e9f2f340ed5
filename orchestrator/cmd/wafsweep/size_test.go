package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSizeCommand(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"a committed sweep", []string{"--config", "waf-accelerated/full-crs/get", "--rps", "5000", "--p99", "50ms", "../../../results/reference-get"},
			0, "instances: 8, 8 CPUs reserved", ""},
		{"a bad request fails before reading", []string{"--config", "x", "--rps", "0", "--p99", "50ms", "/nonexistent"}, 2, "", "want a positive RPS"},
		{"no sweep directory", []string{"--config", "x", "--rps", "5", "--p99", "50ms"}, 2, "", "usage: wafsweep size"},
		{"what the sweep lacks", []string{"--config", "x", "--rps", "5", "--p99", "50ms", "../../../results/reference-get"}, 1, "", `"x" has no SLO knee`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runSize(tc.args, &out, &errOut)
			if code != tc.code || !strings.Contains(out.String(), tc.out) || !strings.Contains(errOut.String(), tc.err) {
				t.Errorf("exit %d, out %q, err %q; want %d, %q, %q", code, out.String(), errOut.String(), tc.code, tc.out, tc.err)
			}
		})
	}
}
