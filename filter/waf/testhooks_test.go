//go:build corazawaf_testhooks

package waf

import "testing"

func TestPanicHeaderSelectsTheStep(t *testing.T) {
	cfg := tierConfig(t, "targeted")
	cfg.TestHooks = &TestHooks{PanicHeader: "x-corazawaf-panic"}
	cfg.OffWorker.MinBodyBytes = 1 // every body's phase 2 is deferred
	e := mustEngine(t, cfg)
	for _, step := range []string{"request_headers", "request_body", "off_worker", "response_headers", "response_body"} {
		t.Run(step, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil {
					t.Fatalf("no panic in %s", step)
				}
			}()
			req := post("/api", "application/json", 7)
			req.Headers = append(req.Headers, Header{"X-Corazawaf-Panic", step})
			s := NewStream(&cfg, e, nil)
			s.OnRequestHeaders(req)
			if d := s.OnRequestBody([][]byte{[]byte(`{"a":1}`)}, true); d.Action == Defer {
				d.Deferred()
			}
			s.OnResponseHeaders(200, []Header{{"content-type", "text/plain"}}, false)
			s.OnResponseBody([][]byte{[]byte("ok")}, true)
		})
	}
	s := NewStream(&cfg, e, nil)
	if d := s.OnRequestHeaders(get("/")); d.Action != Continue {
		t.Fatalf("a request without the header must be served: %+v", d)
	}
}
