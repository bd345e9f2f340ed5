package kind

import (
	"strings"
	"testing"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"

	"github.com/wafsweep/wafsweep/orchestrator/target/kube/spec"
)

// The kind cluster models the GKE pools: one proxy worker, one load
// generator worker, the static CPU manager everywhere.
func TestConfig(t *testing.T) {
	cfg := Config()
	roles := map[string]int{}
	for _, n := range cfg.Nodes {
		switch {
		case n.Role == v1alpha4.ControlPlaneRole:
			roles["control-plane"]++
		case n.Labels[spec.NodeLabelProxy] == "true":
			roles["proxy"]++
		case n.Labels[spec.NodeLabelLoadgen] == "true":
			roles["loadgen"]++
		}
	}
	if roles["control-plane"] != 1 || roles["proxy"] != 1 || roles["loadgen"] != 1 || len(cfg.Nodes) != 3 {
		t.Errorf("nodes %+v", cfg.Nodes)
	}
	patches := strings.Join(cfg.KubeadmConfigPatches, "\n")
	if !strings.Contains(patches, "kind: KubeletConfiguration") || !strings.Contains(patches, "cpuManagerPolicy: static") {
		t.Errorf("the kubelet patch does not enable the static CPU manager cluster-wide: %s", patches)
	}
}
