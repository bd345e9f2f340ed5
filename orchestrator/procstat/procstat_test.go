package procstat

import (
	"os"
	"reflect"
	"testing"
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
