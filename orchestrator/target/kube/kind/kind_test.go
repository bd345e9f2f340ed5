package kind

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"

	"github.com/wafsweep/wafsweep/orchestrator/procstat"
	"github.com/wafsweep/wafsweep/orchestrator/target/kube/spec"
)

func cpuRange(n int) []int {
	cpus := make([]int, n)
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
}

func TestPlanLayout(t *testing.T) {
	for _, tc := range []struct {
		name                            string
		machine                         []int
		proxy, loadgen, backend         int
		allowShared                     bool
		wantProxy, wantLoadgen, wantSys string
		wantShared                      bool
		wantErr                         string
	}{
		{name: "exactly enough", machine: cpuRange(8), proxy: 2, loadgen: 2, backend: 1,
			wantProxy: "1-3", wantLoadgen: "4-7", wantSys: "0"},
		{name: "the rest to the system", machine: cpuRange(16), proxy: 4, loadgen: 2, backend: 1,
			wantProxy: "1-5", wantLoadgen: "6-9", wantSys: "0,10-15"},
		{name: "gaps in the online list", machine: []int{8, 2, 4, 6, 0, 10, 12, 14}, proxy: 2, loadgen: 2, backend: 1,
			wantProxy: "2,4,6", wantLoadgen: "8,10,12,14", wantSys: "0"},
		{name: "too small", machine: cpuRange(2), proxy: 2, loadgen: 2, backend: 1,
			wantErr: "need 8 CPUs with one for the system, this machine has 2"},
		{name: "too small, shared allowed", machine: cpuRange(2), proxy: 2, loadgen: 2, backend: 1, allowShared: true,
			wantSys: "0", wantShared: true},
		{name: "big enough, shared allowed: still disjoint", machine: cpuRange(8), proxy: 2, loadgen: 2, backend: 1, allowShared: true,
			wantProxy: "1-3", wantLoadgen: "4-7", wantSys: "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := PlanLayout(tc.machine, tc.proxy, tc.loadgen, tc.backend, tc.allowShared)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := func(c []int) string {
				if len(c) == 0 {
					return ""
				}
				return procstat.FormatCPUList(c)
			}
			if got(l.Proxy) != tc.wantProxy || got(l.Loadgen) != tc.wantLoadgen || got(l.System) != tc.wantSys || l.Shared != tc.wantShared {
				t.Errorf("layout proxy %q loadgen %q system %q shared %v, want %q %q %q %v",
					got(l.Proxy), got(l.Loadgen), got(l.System), l.Shared, tc.wantProxy, tc.wantLoadgen, tc.wantSys, tc.wantShared)
			}
		})
	}
}

// The kind cluster models the GKE pools: one proxy worker, one load
// generator worker, the static CPU manager everywhere; each worker's
// kubelet reserves every CPU but its own, so the two never hand out the
// same CPU.
func TestConfig(t *testing.T) {
	l, err := PlanLayout(cpuRange(10), 2, 2, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config(l)
	reserved := map[string]string{}
	for _, n := range cfg.Nodes {
		role := "control-plane"
		switch {
		case n.Role == v1alpha4.ControlPlaneRole:
		case n.Labels[spec.NodeLabelProxy] == "true":
			role = "proxy"
		case n.Labels[spec.NodeLabelLoadgen] == "true":
			role = "loadgen"
		default:
			t.Fatalf("node without a role: %+v", n)
		}
		if _, dup := reserved[role]; dup {
			t.Fatalf("two %s nodes", role)
		}
		reserved[role] = reservedCPUsFlag(t, n.KubeadmConfigPatches)
	}
	want := map[string]string{"control-plane": "", "proxy": "0,4-9", "loadgen": "0-3,8-9"}
	if !maps.Equal(reserved, want) {
		t.Errorf("reserved-cpus per node %v, want %v", reserved, want)
	}
	patches := strings.Join(cfg.KubeadmConfigPatches, "\n")
	if !strings.Contains(patches, "kind: KubeletConfiguration") || !strings.Contains(patches, "cpuManagerPolicy: static") ||
		!strings.Contains(patches, `reservedSystemCPUs: "0,8-9"`) {
		t.Errorf("the cluster-wide kubelet patch: %s", patches)
	}
	// What each worker may hand out is disjoint from the other's.
	proxyOwn, loadgenOwn := unreserved(t, reserved["proxy"], 10), unreserved(t, reserved["loadgen"], 10)
	for _, c := range proxyOwn {
		if slices.Contains(loadgenOwn, c) {
			t.Errorf("CPU %d is assignable on both workers (%v, %v)", c, proxyOwn, loadgenOwn)
		}
	}
}

// With --allow-shared-cpus on a small machine the workers keep the old
// reservation of CPU 0 alone, and the layout says so.
func TestConfigShared(t *testing.T) {
	l, err := PlanLayout(cpuRange(2), 2, 2, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range Config(l).Nodes {
		if len(n.KubeadmConfigPatches) != 0 {
			t.Errorf("node %s patched in a shared layout: %q", n.Role, n.KubeadmConfigPatches)
		}
	}
	if !strings.Contains(l.String(), "may overlap") {
		t.Errorf("layout %q does not say the cpusets may overlap", l)
	}
}

func reservedCPUsFlag(t *testing.T, patches []string) string {
	t.Helper()
	for _, p := range patches {
		for _, line := range strings.Split(p, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "reserved-cpus: "); ok {
				if !strings.Contains(p, "kind: JoinConfiguration") || !strings.Contains(p, "kubeletExtraArgs:") {
					t.Errorf("reserved-cpus outside a JoinConfiguration's kubeletExtraArgs: %s", p)
				}
				return strings.Trim(v, `"`)
			}
		}
	}
	return ""
}

func unreserved(t *testing.T, reserved string, n int) []int {
	t.Helper()
	r, err := procstat.ParseCPUList(reserved)
	if err != nil {
		t.Fatal(err)
	}
	var own []int
	for c := range n {
		if !slices.Contains(r, c) {
			own = append(own, c)
		}
	}
	return own
}
