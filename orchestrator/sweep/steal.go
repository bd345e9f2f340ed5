package sweep

import (
	"math"
	"sync"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/target"
)

// stealEvery is how often the measured CPUs' steal is read in the window.
const stealEvery = time.Second

// stealWatch reads the hypervisor's steal from the measured CPUs every
// second of the window. The window's mean hides a burst: 0.3 s taken in
// one second of a 20 s window is 1.5% of the window, under its limit, yet
// it stalls every request of that second and can multiply a p99.
type stealWatch struct {
	read func() float64 // cumulative seconds; negative when unreadable
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	got  []stealReading
}

// stealReading is the cumulative steal at one moment.
type stealReading struct {
	at      time.Time
	seconds float64
}

// watchSteal starts reading d's steal, when d can be read apart (a
// target.StealReader); nil otherwise.
func watchSteal(d target.Deployed, every time.Duration) *stealWatch {
	sr, ok := d.(target.StealReader)
	if !ok {
		return nil
	}
	w := &stealWatch{read: sr.StealSeconds, stop: make(chan struct{}), done: make(chan struct{})}
	w.take()
	go w.loop(every)
	return w
}

func (w *stealWatch) loop(every time.Duration) {
	defer close(w.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			w.take()
		case <-w.stop:
			return
		}
	}
}

func (w *stealWatch) take() {
	r := stealReading{at: time.Now(), seconds: w.read()}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, r)
}

// finish stops the watch with a last reading and returns the most steal
// of any interval between two readings, in seconds per second; NaN when
// there was none to compare. A nil watch returns NaN.
func (w *stealWatch) finish() float64 {
	if w == nil {
		return math.NaN()
	}
	close(w.stop)
	<-w.done
	w.take()
	w.mu.Lock()
	defer w.mu.Unlock()
	return peakStealRate(w.got, stealEvery/2)
}

// peakStealRate is the largest steal rate over consecutive intervals of
// at least shortest between readings; a shorter last interval (the
// window's tail) is measured with the one before it, since one clock tick
// of steal over a few milliseconds is no rate. NaN when no interval could
// be read (a reading is negative when it could not be taken).
func peakStealRate(readings []stealReading, shortest time.Duration) float64 {
	peak := math.NaN()
	note := func(a, b stealReading) {
		span := b.at.Sub(a.at).Seconds()
		if a.seconds < 0 || b.seconds < 0 || span <= 0 {
			return
		}
		if r := (b.seconds - a.seconds) / span; math.IsNaN(peak) || r > peak {
			peak = r
		}
	}
	from, before := 0, -1
	for i := 1; i < len(readings); i++ {
		long := readings[i].at.Sub(readings[from].at) >= shortest
		last := i == len(readings)-1
		switch {
		case long:
			note(readings[from], readings[i])
		case last && before >= 0:
			note(readings[before], readings[i])
		case last:
			note(readings[from], readings[i])
		default:
			continue
		}
		before, from = from, i
	}
	return peak
}
