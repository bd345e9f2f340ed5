package workerp_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkCallbackWakeups measures what Keep and ProcsFor leave of the Go
// runtime's cost for a C thread that calls Go from an epoll loop, the way an
// Envoy worker calls the module: a C host calls a c-shared library's hook 5
// times per request at a fixed rate, and the benchmark reports the CPU time
// and context switches per request above the same host calling a C hook
// that does nothing. No Envoy, no network: only the runtime's own wake-ups
// (sysmon, handed-off Ps, yields). The machine's noise applies as to any
// CPU-time figure; the context switches are the steadier measure.
func BenchmarkCallbackWakeups(b *testing.B) {
	dir := b.TempDir()
	host, lib, null := filepath.Join(dir, "host"), filepath.Join(dir, "lib.so"), filepath.Join(dir, "null.so")
	build(b, "cc", "-O2", "-o", host, "testdata/wakebench/host.c", "-ldl", "-lpthread")
	build(b, "cc", "-O2", "-shared", "-fPIC", "-o", null, "testdata/wakebench/null.c")
	build(b, "go", "build", "-buildmode=c-shared", "-o", lib, "./testdata/wakebench/lib")
	const seconds, hooks = 4, 5
	for _, rate := range []int{150, 500, 1000} {
		b.Run(fmt.Sprintf("rps=%d", rate), func(b *testing.B) {
			for range b.N {
				floorCPU, floorSwitches := runHost(b, host, null, rate, seconds, hooks)
				cpu, switches := runHost(b, host, lib, rate, seconds, hooks)
				b.ReportMetric(cpu-floorCPU, "extra-µs-cpu/req")
				b.ReportMetric(switches-floorSwitches, "extra-switches/req")
			}
		})
	}
}

func build(b *testing.B, tool string, args ...string) {
	b.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		b.Skipf("no %s: %v", tool, err)
	}
	cmd := exec.Command(tool, args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
}

// runHost runs the host for one library and returns its CPU microseconds
// and context switches per request.
func runHost(b *testing.B, host, lib string, rate, seconds, hooks int) (cpuMicros, switches float64) {
	b.Helper()
	cmd := exec.Command(host, lib, strconv.Itoa(rate), strconv.Itoa(seconds), strconv.Itoa(hooks))
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s %s: %v", host, lib, err)
	}
	if _, err := fmt.Sscan(string(out), &cpuMicros, &switches); err != nil {
		b.Fatalf("%s printed %q: %v", host, out, err)
	}
	return cpuMicros, switches
}
