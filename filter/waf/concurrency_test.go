package waf

import (
	"fmt"
	"sync"
	"testing"
)

// Many streams share one Engine from several goroutines, as Envoy's workers
// do; run with -race (make test does) to prove the glue has no data race.
func TestConcurrentStreamsShareAnEngine(t *testing.T) {
	cfg := tierConfig(t, "full-crs")
	e := mustEngine(t, cfg)
	route, err := NewRoute(RouteConfig{Mode: ModeDetect}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const workers, perWorker = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				engine := e
				if i%3 == 0 {
					// Streams of a detect route share the listener's
					// detect-only twin with the blocking ones.
					var err error
					if engine, err = route.Engine(e); err != nil {
						errs <- err
						return
					}
				}
				attack := i%2 == 0
				path := fmt.Sprintf("/items?id=%d", i)
				if attack {
					path = "/items?id=1%27%20or%201%3D1--"
				}
				s := NewStream(&cfg, engine, nil)
				d := s.OnRequestHeaders(get(path))
				s.OnResponseHeaders(200, []Header{{"content-type", "text/plain"}}, true)
				out := s.Complete()
				blocking := engine.Mode() == ModeBlock
				if got, want := d.Action == Reply, attack && blocking; got != want {
					errs <- fmt.Errorf("worker %d request %d: blocked %v, want %v", w, i, got, want)
				}
				if attack && !blocking && out.Detected == nil {
					errs <- fmt.Errorf("worker %d request %d: detect-only twin did not record the attack", w, i)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
