package kube

import (
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
)

// A run aimed at the control URL goes to the pod: in clear by its address,
// over TLS by the Host name it sends, resolved to the pod's address, so the
// certificate is verified for the name and the connection reaches the pod.
func TestDataPlaneSpec(t *testing.T) {
	for _, tc := range []struct {
		name, control, data, host string
		wantURL, wantResolve      string
	}{
		{"clear", "http://127.0.0.1:4321", "http://10.244.1.7:10000", "", "http://10.244.1.7:10000/api/orders?x=1", ""},
		{"tls", "https://127.0.0.1:4321", "https://10.244.1.7:10000", "", "https://" + loadgen.DefaultHost + ":10000/api/orders?x=1", "10.244.1.7"},
		{"tls with a Host of the plan's", "https://127.0.0.1:4321", "https://10.244.1.7:10000", "shop.example", "https://shop.example:10000/api/orders?x=1", "10.244.1.7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dataPlaneSpec(loadgen.Spec{URL: tc.control + "/api/orders?x=1", Host: tc.host}, tc.control, tc.data)
			if err != nil || got.URL != tc.wantURL || got.Resolve != tc.wantResolve {
				t.Errorf("got %s resolve %q (%v), want %s resolve %q", got.URL, got.Resolve, err, tc.wantURL, tc.wantResolve)
			}
		})
	}
	if _, err := dataPlaneSpec(loadgen.Spec{URL: "http://127.0.0.1:1/x"}, "http://127.0.0.1:4321", "http://10.244.1.7:10000"); err == nil {
		t.Error("a run aimed elsewhere was pointed at the pod")
	}
}
