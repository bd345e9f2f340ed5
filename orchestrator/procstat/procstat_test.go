package procstat

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// The name contains spaces and a ')' on purpose.
	stat := []byte("42 (envoy (worker) x) S 1 42 42 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0 100 1000 200 18446744073709551615")
	got, err := parseStatCPU(stat)
	if err != nil || got != 3.0 {
		t.Fatalf("got %v, %v; want 3.0 s (250+50 ticks)", got, err)
	}
	if _, err := parseStatCPU([]byte("garbage")); err == nil {
		t.Fatal("malformed stat accepted")
	}
}

func TestParseStatusMemory(t *testing.T) {
	status := []byte("Name:\tenvoy\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t3\n")
	m, err := parseStatusMemory(status)
	if err != nil || m.RSSBytes != 100<<20 || m.PeakBytes != 200<<20 {
		t.Fatalf("got %+v, %v", m, err)
	}
	if _, err := parseStatusMemory([]byte("Name:\tx\n")); err == nil {
		t.Fatal("status without memory lines accepted")
	}
}

func TestOwnProcess(t *testing.T) {
	cpu, err := CPUSeconds(os.Getpid())
	if err != nil || cpu < 0 {
		t.Fatalf("CPUSeconds: %v %v", cpu, err)
	}
	m, err := ReadMemory(os.Getpid())
	if err != nil || m.RSSBytes == 0 || m.PeakBytes < m.RSSBytes {
		t.Fatalf("ReadMemory: %+v %v", m, err)
	}
	if self, err := SelfCPUSeconds(); err != nil || self <= 0 {
		t.Fatalf("SelfCPUSeconds: %v %v", self, err)
	}
}

func TestCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		bad  bool
	}{
		{"0", []int{0}, false},
		{"0-2,5", []int{0, 1, 2, 5}, false},
		{"1,3-4", []int{1, 3, 4}, false},
		{"", nil, true},
		{"2-1", nil, true},
		{"a", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseCPUList(tt.in)
		if (err != nil) != tt.bad || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v", tt.in, got, err)
		}
		if !tt.bad && FormatCPUList(got) != tt.in {
			t.Errorf("FormatCPUList(%v) = %q, want %q", got, FormatCPUList(got), tt.in)
		}
	}
}

func TestRunDelayGrowsWhenTheCPUIsShared(t *testing.T) {
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("no schedstat in this kernel")
	}
	// Two busy goroutines on one pinned CPU: each waits while the other
	// runs, so this process's run delay must grow by about the busy time.
	if err := PinProcess(os.Getpid(), []int{0}); err != nil {
		t.Skip("cannot pin:", err)
	}
	t.Cleanup(func() { _ = PinProcess(os.Getpid(), allCPUs()) })
	before, err := RunDelaySeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	busy(2, 300*time.Millisecond)
	after, err := RunDelaySeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if grew := after - before; grew < 0.1 {
		t.Errorf("run delay grew by %.3f s while two threads shared one CPU for 0.3 s", grew)
	}
	if _, err := parseSchedstatDelay([]byte("12 x 3")); err == nil {
		t.Error("a malformed schedstat parsed")
	}
}

func busy(threads int, d time.Duration) {
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			for end := time.Now().Add(d); time.Now().Before(end); {
			}
		}()
	}
	wg.Wait()
}

func allCPUs() []int {
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
}

func TestParseSteal(t *testing.T) {
	stat := []byte("cpu  1 2 3 4 5 6 7 800 0 0\ncpu0 1 2 3 4 5 6 7 300 0 0\ncpu1 1 2 3 4 5 6 7 500 0 0\nintr 1\n")
	tests := []struct {
		cpus []int
		want float64
		ok   bool
	}{
		{[]int{1}, 5, true},
		{[]int{0, 1}, 8, true},
		{[]int{2}, 0, false}, // no such CPU
	}
	for _, tc := range tests {
		got, err := parseSteal(stat, tc.cpus)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSteal(%v) = %v, %v; want %v (ok %v)", tc.cpus, got, err, tc.want, tc.ok)
		}
	}
	if _, err := StealSeconds([]int{0}); err != nil {
		t.Errorf("this machine's steal: %v", err)
	}
}

func TestParseCPUInfo(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		model      string
		cpus       int
	}{
		{"two x86 CPUs", "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t: fpu\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\n", "Intel(R) Xeon(R) Processor", 2},
		{"arm64 without model name", "processor\t: 0\nBogoMIPS\t: 50.00\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\n", "unknown", 2},
		{"empty", "", "unknown", 0},
	} {
		if model, cpus := parseCPUInfo(tc.text); model != tc.model || cpus != tc.cpus {
			t.Errorf("%s: parseCPUInfo = %q, %d; want %q, %d", tc.name, model, cpus, tc.model, tc.cpus)
		}
	}
	if model, cpus := CPUInfo(); cpus < 1 || model == "" {
		t.Errorf("this machine's CPUInfo = %q, %d", model, cpus)
	}
}

func TestParseIOWriteBytes(t *testing.T) {
	for _, tc := range []struct {
		name, io string
		want     int64
		ok       bool
	}{
		{"kernel layout", "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n", 8192, true},
		{"no write_bytes", "rchar: 10\nwchar: 20\n", 0, false},
		{"garbled", "write_bytes: many\n", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseIOWriteBytes([]byte(tc.io))
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("got %d, %v; want %d (ok %v)", got, err, tc.want, tc.ok)
			}
		})
	}
}

// A file written by this process shows in its write_bytes at once (the
// kernel counts pages as they are dirtied, before any flush).
func TestWrittenBytesCountsAFileThisProcessWrites(t *testing.T) {
	dir, err := os.MkdirTemp(".", "written-") // the package's file system: /tmp may be tmpfs
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if counted, err := StorageCounted(dir); err != nil || !counted {
		t.Skipf("the test's directory is in memory (%v): nothing reaches storage, write_bytes stays 0", err)
	}
	before, err := WrittenBytes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	const size = 1 << 20
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := WrittenBytes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < size {
		t.Fatalf("write_bytes grew by %d after writing %d bytes", after-before, size)
	}
}
