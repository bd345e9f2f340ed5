package offload

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// niceOf reads a thread's nice value from /proc (field 19 of stat).
func niceOf(t *testing.T, tid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", tid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	nice, err := strconv.Atoi(fields[16])
	if err != nil {
		t.Fatal(err)
	}
	return nice
}

func TestTasksRunOnNicedThreadsThatEndWithThePool(t *testing.T) {
	p := New()
	if err := p.Grow(2); err != nil {
		t.Fatalf("threads not niced: %v", err)
	}
	if err := p.Grow(1); err != nil || p.Threads() != 2 {
		t.Fatalf("Grow(1) after Grow(2): %d threads, %v; a pool never shrinks", p.Threads(), err)
	}
	var (
		mu   sync.Mutex
		tids = map[int]bool{}
		wg   sync.WaitGroup
	)
	for range 20 {
		wg.Add(1)
		if err := p.TrySubmit(func() {
			defer wg.Done()
			mu.Lock()
			tids[syscall.Gettid()] = true
			mu.Unlock()
			time.Sleep(time.Millisecond)
		}, MaxQueueLength); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if len(tids) == 0 || len(tids) > 2 {
		t.Fatalf("tasks ran on %d threads, want 1 or 2", len(tids))
	}
	for tid := range tids {
		if got := niceOf(t, tid); got != Niceness {
			t.Errorf("pool thread %d has nice %d, want %d", tid, got, Niceness)
		}
	}
	if got := niceOf(t, syscall.Gettid()); got == Niceness {
		t.Errorf("the submitting thread was niced too (%d)", got)
	}
	p.Close()
	p.Wait()
	// The runtime ends a locked thread just after its goroutine returns,
	// except the process's main thread, which it parks for good instead.
	for tid := range tids {
		if tid == os.Getpid() {
			continue
		}
		deadline := time.Now().Add(5 * time.Second)
		for threadExists(tid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if threadExists(tid) {
			t.Errorf("pool thread %d still exists 5 s after Close", tid)
		}
	}
}

func threadExists(tid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid))
	return err == nil
}

func TestTrySubmitNeverBlocks(t *testing.T) {
	const queueLength = 5
	p := New()
	if err := p.TrySubmit(func() {}, queueLength); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("TrySubmit to a pool without threads = %v, want ErrQueueFull", err)
	}
	if err := p.Grow(1); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	started := make(chan struct{})
	if err := p.TrySubmit(func() { close(started); <-release }, queueLength); err != nil {
		t.Fatal(err)
	}
	<-started
	ran := 0
	var mu sync.Mutex
	for range queueLength {
		if err := p.TrySubmit(func() { mu.Lock(); ran++; mu.Unlock() }, queueLength); err != nil {
			t.Fatalf("queue refused a task before it was full: %v", err)
		}
	}
	if err := p.TrySubmit(func() {}, queueLength); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("TrySubmit on a full queue = %v, want ErrQueueFull", err)
	}
	if err := p.TrySubmit(func() { mu.Lock(); ran++; mu.Unlock() }, queueLength+1); err != nil {
		t.Fatalf("a caller allowing a longer queue was refused: %v", err)
	}
	if got := p.Queued(); got != queueLength+1 {
		t.Fatalf("Queued() = %d, want %d", got, queueLength+1)
	}
	close(release)
	p.Close()
	p.Wait()
	if ran != queueLength+1 || p.Queued() != 0 {
		t.Fatalf("Wait returned with %d of %d queued tasks run, %d still counted queued", ran, queueLength+1, p.Queued())
	}
	if err := p.TrySubmit(func() {}, queueLength); !errors.Is(err, ErrClosed) {
		t.Fatalf("TrySubmit after Close = %v, want ErrClosed", err)
	}
	p.Close() // a second Close is harmless
}
