package e2e

import (
	"fmt"
	"sync"
	"testing"
)

// Envoy stores the module's objects as integer handles 1, 2, 3... Typed
// as pointers on the Go side, the first 4095 of them would make the Go
// runtime abort Envoy ("invalid pointer found on stack") whenever it moves
// a hook's stack while one is live, which garbage collection does to shrink
// stacks. This test makes that as likely as it gets: a collection after
// every few KB allocated (GOGC=1) through the first few thousand streams.
func TestFirstHandlesSurviveConstantGarbageCollection(t *testing.T) {
	p := startProxy(t, proxyOptions{config: `{"directives":[` + tierDirectives(t, "targeted") + `]}`, env: []string{"GOGC=1"}})
	const clients, perClient = 8, 400
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Go(func() {
			for i := range perClient {
				r := request{path: fmt.Sprintf("/orders/%d/%d", c, i)}
				if i%2 == 1 {
					r.path, r.body, r.contentType = "/api/orders", `{"id":1,"note":"hello"}`, "application/json"
				}
				if resp, err := p.send(r); err != nil || resp.status != 200 {
					errs <- fmt.Errorf("request %d of client %d: status %d, %v", i, c, resp.status, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("%v\nEnvoy exited: %v\n%s", err, p.envoy.Exited(), p.logTail())
	}
}
