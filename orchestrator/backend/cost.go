package backend

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Cost is work the backend does for every request before it answers: a
// calibration backend, whose capacity and latency are known, so that a
// sweep of it (flavor direct) checks the harness against ground truth.
//
// CPU is spent on the handling thread's own CPU clock, not the wall clock:
// pinned to one core, the backend serves at most 1/CPU requests per second
// however many connections wait, and each request costs CPU of that core.
// Sleep adds a fixed latency that costs no CPU (slept on the monotonic
// clock with clock_nanosleep, see sleepPrecisely).
type Cost struct {
	CPU   time.Duration
	Sleep time.Duration
}

// IsZero reports the plain backend.
func (c Cost) IsZero() bool { return c.CPU == 0 && c.Sleep == 0 }

// Validate rejects negative costs.
func (c Cost) Validate() error {
	if c.CPU < 0 || c.Sleep < 0 {
		return fmt.Errorf("backend cost %+v: durations must not be negative", c)
	}
	return nil
}

// String is the form the metadata records, e.g. "cpu=2ms sleep=0s".
func (c Cost) String() string { return fmt.Sprintf("cpu=%s sleep=%s", c.CPU, c.Sleep) }

// spend does the request's work.
func (c Cost) spend() {
	if c.CPU > 0 {
		burnThreadCPU(c.CPU)
	}
	if c.Sleep > 0 {
		sleepPrecisely(c.Sleep)
	}
}

// sleepPrecisely waits d on the monotonic clock in a thread of its own:
// the runtime's timers wake a sleeping goroutine up to a few milliseconds
// late on an idle VM (p99 2.6 ms seen, against 0.7 ms for clock_nanosleep),
// which would blur the latency a calibration backend promises.
func sleepPrecisely(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		time.Sleep(d)
		return
	}
	deadline := unix.NsecToTimespec(now.Nano() + int64(d))
	for {
		// Absolute, so that a signal's EINTR resumes towards the same end.
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &deadline, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// burnThreadCPU spins until this thread has used d of CPU time. The
// goroutine is locked to its thread so that the clock read is its own; a
// thread preempted by another request's does not advance its clock.
func burnThreadCPU(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, err := threadCPU()
	if err != nil {
		busyWall(d) // no thread clock: the wall clock is the best left
		return
	}
	for {
		now, err := threadCPU()
		if err != nil || now-start >= d {
			return
		}
	}
}

func threadCPU() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, errors.Join(errors.New("backend: thread CPU clock"), err)
	}
	return time.Duration(ts.Nano()), nil
}

func busyWall(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// ParseCost reads the String form back, as a dataset's metadata has it.
func ParseCost(s string) (Cost, error) {
	var cpu, sleep string
	if _, err := fmt.Sscanf(s, "cpu=%s sleep=%s", &cpu, &sleep); err != nil {
		return Cost{}, fmt.Errorf("backend cost %q: %w (want cpu=<duration> sleep=<duration>)", s, err)
	}
	var c Cost
	var err error
	if c.CPU, err = time.ParseDuration(cpu); err == nil {
		c.Sleep, err = time.ParseDuration(sleep)
	}
	if err != nil {
		return Cost{}, fmt.Errorf("backend cost %q: %w", s, err)
	}
	return c, c.Validate()
}

// calibrationNote starts the note a calibration backend leaves in a
// sweep's metadata.
const calibrationNote = "calibration backend: "

// Note is what a sweep's metadata says of a calibration backend.
func (c Cost) Note() string { return calibrationNote + c.String() + " per request" }

// CostFromNotes finds a calibration backend's cost among a sweep's notes.
func CostFromNotes(notes []string) (Cost, bool) {
	for _, n := range notes {
		if s, ok := strings.CutPrefix(n, calibrationNote); ok {
			c, err := ParseCost(strings.TrimSuffix(s, " per request"))
			return c, err == nil
		}
	}
	return Cost{}, false
}
