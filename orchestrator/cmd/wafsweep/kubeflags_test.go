package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/target/kube/launch"
)

// The Kubernetes flags are checked before anything is contacted, every
// problem reported at once.
func TestKubeFlags(t *testing.T) {
	dir := t.TempDir()
	missing := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		name    string
		args    []string
		wantErr []string
	}{
		{"kube without an image source", []string{"--target", "kube", "--image", ""},
			[]string{"--registry", "--image"}},
		{"kind with a registry, no cores", []string{"--target", "kind", "--registry", "r.example/x", "--proxy-cores", "0", "--envoy", missing("envoy"), "--pod-binary", missing("pod")},
			[]string{"kind loads the image", "--proxy-cores 0", "--envoy", "--pod-binary"}},
		{"bad namespace and memory", []string{"--target", "kube", "--image", "r.example/x:1", "--namespace", "Not_A_Label", "--proxy-memory", "lots"},
			[]string{"--namespace", "--proxy-memory"}},
		{"bad plan and target flags together", []string{"--target", "kube", "--image", "r.example/x:1", "--ladder", "9,3"},
			[]string{"ascending"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, err := parseSweepFlags(tt.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.sweepOptions()
			for _, want := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want it to mention %q", err, want)
				}
			}
		})
	}
}

// A valid kube command line makes a startable target named after the
// target, in a namespace of the sweep's own, without contacting anything.
func TestKubeFlagsMakeAStartableTarget(t *testing.T) {
	f, _, err := parseSweepFlags([]string{"--target", "kube", "--image", "r.example/wafsweep-pod@sha256:00", "--kubeconfig", "/nonexistent"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := f.sweepOptions()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := opts.Target.(startable); !ok || opts.Target.Name() != "kube" || !strings.HasPrefix(opts.SweepID, "kube-") {
		t.Fatalf("target %T %s, sweep %s", opts.Target, opts.Target.Name(), opts.SweepID)
	}
	if ns := launch.NamespaceFor(opts.SweepID); ns != "wafsweep-"+opts.SweepID {
		t.Errorf("namespace %s", ns)
	}
}
