package kube

import (
	"strings"
	"testing"
)

// What metadata.json says of a placement, per case.
func TestPlacementString(t *testing.T) {
	cases := []struct {
		p    placement
		want string
	}{
		{placement{Node: "n1", CPUs: "2-3", Cores: 2, Exclusive: true}, "n1:2-3 (exclusive)"},
		{placement{Node: "kind-worker", CPUs: "1", Cores: 1, Exclusive: true, nodesShareCPUs: true}, "not truly exclusive"},
		{placement{Node: "n1", CPUs: "0-3", Cores: 2, Why: "cpuset 0-3 has 4 CPUs"}, "NOT exclusive: cpuset 0-3 has 4 CPUs"},
		{placement{Node: "n2", CPUs: "0-1", Cores: 0, Why: "fractional CPU"}, "shared pool: fractional CPU"},
	}
	for _, c := range cases {
		if got := c.p.String(); !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}
