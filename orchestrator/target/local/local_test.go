package local

import (
	"runtime"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/plan"
	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

func TestNewRejectsBadCPUAssignments(t *testing.T) {
	n := runtime.NumCPU()
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"CPU that does not exist", Options{EnvoyBinary: "/bin/true", ProxyCPUs: []int{n + 3}}, "does not exist"},
		{"proxy shares the load generator's CPU", Options{EnvoyBinary: "/bin/true", ProxyCPUs: []int{0}, LoadgenCPUs: []int{0}}, "share CPUs 0: give the proxy its own cores"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestSharedCPUsAreAcceptedOnRequestAndNoted(t *testing.T) {
	l, err := New(Options{EnvoyBinary: "/bin/true", ProxyCPUs: []int{0}, LoadgenCPUs: []int{0}, SharedCPUs: true})
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(l.Describe().Notes, " "); !strings.Contains(notes, "proxy shares CPUs 0 with the load generator") {
		t.Fatalf("the shared CPU is not noted: %s", notes)
	}
}

func TestDefaultsSplitTheMachine(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	l, err := New(Options{EnvoyBinary: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	d := l.Describe()
	if d.CoreAssignment["proxy"] == "" || d.CoreAssignment["proxy"] == d.CoreAssignment["loadgen"] {
		t.Fatalf("core assignment %v", d.CoreAssignment)
	}
	if len(d.Notes) == 0 || !strings.Contains(strings.Join(d.Notes, " "), "backend") {
		t.Fatalf("an in-process backend must be noted: %v", d.Notes)
	}
	// The processor is part of the description, hence of the sweep's
	// identity: the same command on another machine kind is another sweep.
	if model, cores := procstat.CPUInfo(); d.CPUModel != model || d.Cores != cores || cores < 2 {
		t.Fatalf("describes the processor as %d x %q, /proc/cpuinfo says %d x %q", d.Cores, d.CPUModel, cores, model)
	}
	p := plan.Default()
	if err := l.CheckModule(p); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("a WAF plan without a module must name the fix: %v", err)
	}
}

func TestEachFlavorLoadsItsModule(t *testing.T) {
	tests := []struct {
		opts   Options
		flavor string
		want   string
	}{
		{Options{ModulePath: "/b/libcorazawaf.so"}, plan.FlavorWAF, "/b/libcorazawaf.so"},
		{Options{ModulePath: "/b/libcorazawaf.so"}, plan.FlavorWAFAccelerated, "/b/libcorazawaf-accelerated.so"},
		{Options{ModulePath: "/b/libcorazawaf.so", AcceleratedModulePath: "/x/a.so"}, plan.FlavorWAFAccelerated, "/x/a.so"},
		{Options{}, plan.FlavorWAFAccelerated, ""},
		{Options{ModulePath: "/b/libcorazawaf.so"}, plan.FlavorEnvoyNoopModule, "/b/libnoopmodule.so"},
		{Options{ModulePath: "/b/libcorazawaf.so", NoopModulePath: "/x/n.so"}, plan.FlavorEnvoyNoopModule, "/x/n.so"},
		{Options{}, plan.FlavorEnvoyNoopModule, ""},
	}
	for _, tt := range tests {
		l := &Local{opts: tt.opts}
		if got := l.ModulePath(tt.flavor); got != tt.want {
			t.Errorf("%+v %s: module %q, want %q", tt.opts, tt.flavor, got, tt.want)
		}
	}
}

// BuildFor is what the Kubernetes image builder reads too: the builds
// beside the stock one.
func TestBuildForFindsTheBuildsBesideStock(t *testing.T) {
	for flavor, want := range map[string]string{
		plan.FlavorWAF:             "/b/libcorazawaf.so",
		plan.FlavorWAFAccelerated:  "/b/libcorazawaf-accelerated.so",
		plan.FlavorEnvoyNoopModule: "/b/libnoopmodule.so",
	} {
		if got := BuildFor(flavor, "/b/libcorazawaf.so"); got != want {
			t.Errorf("%s: %q, want %q", flavor, got, want)
		}
	}
}
