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
		{placement{Node: "kind-worker", CPUs: "1", Cores: 1, Exclusive: true, nodesShareCPUs: true}, "exclusive within its node; kind nodes share the machine"},
		{placement{Node: "n1", CPUs: "0-3", Cores: 2, Why: "cpuset 0-3 has 4 CPUs"}, "NOT exclusive: cpuset 0-3 has 4 CPUs"},
		{placement{Node: "n2", CPUs: "0-1", Cores: 0, Why: "fractional CPU"}, "shared pool: fractional CPU"},
	}
	for _, c := range cases {
		if got := c.p.String(); !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}

// The proxy's cpuset must be its own on the machine it runs on: kind's
// nodes are one machine, so an overlap with the load generator's or the
// backend's is refused there (noted with --allow-shared-cpus); on a real
// cluster only the same node counts.
func TestCheckOwnCPUs(t *testing.T) {
	// Exclusive: a shared-pool container on the proxy's node would be
	// read again, from a real node (TestRealNodeSweepStep does that).
	others := map[string]placement{
		"loadgen": {Node: "lg", CPUs: "4-5", Cores: 2, Exclusive: true},
		"backend": {Node: "lg", CPUs: "6", Cores: 1, Exclusive: true},
	}
	for _, tc := range []struct {
		name           string
		proxy          placement
		oneMachine     bool
		allowShared    bool
		wantErr        string
		wantNoteShared string
	}{
		{name: "kind, disjoint", proxy: placement{Node: "px", CPUs: "1-2"}, oneMachine: true},
		{name: "kind, overlapping the load generator", proxy: placement{Node: "px", CPUs: "3-4"}, oneMachine: true,
			wantErr: "shares CPUs 4 with the loadgen's 4-5"},
		{name: "kind, overlapping the backend", proxy: placement{Node: "px", CPUs: "6-7"}, oneMachine: true,
			wantErr: "shares CPUs 6 with the backend's 6"},
		{name: "kind, overlapping, allowed", proxy: placement{Node: "px", CPUs: "3-5"}, oneMachine: true, allowShared: true,
			wantNoteShared: "shares CPUs 4-5 with the loadgen's"},
		{name: "cluster, same numbers on another node", proxy: placement{Node: "px", CPUs: "4-5"}},
		{name: "cluster, same node", proxy: placement{Node: "lg", CPUs: "5"}, wantErr: "shares CPUs 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &Kube{opts: Options{NodesShareCPUs: tc.oneMachine, AllowSharedCPUs: tc.allowShared}, placed: others}
			// Every configuration's Envoy is checked: the second check of
			// the same cpuset adds no second note.
			err := k.checkOwnCPUs(t.Context(), tc.proxy)
			if err == nil {
				err = k.checkOwnCPUs(t.Context(), tc.proxy)
			}
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			}
			notes := strings.Join(k.notes, "\n")
			if tc.wantNoteShared != "" && (!strings.Contains(notes, tc.wantNoteShared) || len(k.notes) != 1) {
				t.Errorf("notes %q: want one note with %q", notes, tc.wantNoteShared)
			}
			if tc.wantNoteShared == "" && notes != "" {
				t.Errorf("unexpected notes %q", notes)
			}
		})
	}
}
