package waf

import (
	"bytes"
	"fmt"
	"testing"
)

// budgetFilter is a filter config with a 1 MiB body budget whose rules read
// request and response bodies.
func budgetFilter(t *testing.T) *Filter {
	t.Helper()
	f, err := NewFilter([]byte(`{"directives":["SecRuleEngine On","SecRequestBodyAccess On","SecResponseBodyAccess On",`+
		`"SecResponseBodyMimeType text/plain","SecRequestBodyLimit 4194304","SecResponseBodyLimit 4194304",`+
		`"SecRule REQUEST_BODY \"@contains attack\" \"id:1,phase:2,deny,log\"",`+
		`"SecRule RESPONSE_BODY \"@contains leak\" \"id:2,phase:4,deny,log\""],"body_budget_bytes":1048576}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func newBudgetStream(t *testing.T, f *Filter) *Stream {
	t.Helper()
	s, err := f.NewStream(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Bodies held for inspection share one budget across streams: a stream
// whose body would go over it is answered 503 and counted, whatever the
// failure mode, and a finished stream gives its bytes back.
func TestBodyBudgetIsSharedByStreams(t *testing.T) {
	f := budgetFilter(t)
	chunk := bytes.Repeat([]byte("a"), 700<<10)

	first := newBudgetStream(t, f)
	first.OnRequestHeaders(post("/upload", "text/plain", 2*len(chunk)))
	if d := first.OnRequestBody([][]byte{chunk}, false); d.Action != Hold {
		t.Fatalf("first body within the budget: %+v, want Hold", d)
	}
	if held := f.BodyBytesHeld(); held != int64(len(chunk)) {
		t.Fatalf("held %d bytes, want %d", held, len(chunk))
	}

	second := newBudgetStream(t, f)
	second.OnRequestHeaders(post("/upload", "text/plain", len(chunk)))
	d := second.OnRequestBody([][]byte{chunk}, true)
	if d.Action != Reply || d.Reply.Status != 503 || d.Reply.Details != "corazawaf_body_budget" {
		t.Fatalf("second body over the budget: %+v, want a 503 corazawaf_body_budget reply", d)
	}
	if out := second.Complete(); out.Shed != ShedBodyBudget {
		t.Fatalf("outcome %+v: want Shed %q", out, ShedBodyBudget)
	}
	if held := f.BodyBytesHeld(); held != int64(len(chunk)) {
		t.Fatalf("after the shed stream: held %d bytes, want the first stream's %d", held, len(chunk))
	}

	first.Complete()
	if held := f.BodyBytesHeld(); held != 0 {
		t.Fatalf("after both streams ended: held %d bytes, want 0", held)
	}
	third := newBudgetStream(t, f)
	third.OnRequestHeaders(post("/upload", "text/plain", len(chunk)))
	if d := inPlace(third.OnRequestBody([][]byte{chunk}, true)); d.Action != Continue {
		t.Fatalf("a body within the budget again: %+v, want Continue", d)
	}
	if out := third.Complete(); out.Shed != "" {
		t.Fatalf("a stream within the budget was shed: %+v", out)
	}
}

// Held response bodies count too; a stream whose inspection broke off
// (Release, after a panic) gives its bytes back as Complete does.
func TestBodyBudgetCountsResponsesAndReleases(t *testing.T) {
	f := budgetFilter(t)
	chunk := bytes.Repeat([]byte("b"), 600<<10)

	held := newBudgetStream(t, f)
	held.OnRequestHeaders(get("/download"))
	if d := held.OnResponseHeaders(200, []Header{{"content-type", "text/plain"}}, false); d.Action != Hold {
		t.Fatalf("response headers: %+v, want Hold for body inspection", d)
	}
	if d := held.OnResponseBody([][]byte{chunk}, false); d.Action != Hold {
		t.Fatalf("first response chunk: %+v, want Hold", d)
	}
	if d := held.OnResponseBody([][]byte{chunk}, false); d.Action != Reply || d.Reply.Status != 503 {
		t.Fatalf("response past the budget: %+v, want 503", d)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if n := f.BodyBytesHeld(); n != 0 {
		t.Fatalf("after Release: held %d bytes, want 0", n)
	}
}

func TestBodyBudgetConfig(t *testing.T) {
	tests := []struct {
		json    string
		want    int64
		wantErr bool
	}{
		{`{}`, DefaultBodyBudgetBytes, false},
		{`{"body_budget_bytes": 2097152}`, 2 << 20, false},
		{`{"body_budget_bytes": 1024}`, 0, true},
		{`{"body_budget_bytes": -1}`, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tt.json))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseConfig: err %v, want error %v", err, tt.wantErr)
			}
			if err == nil && cfg.BodyBudgetBytes != tt.want {
				t.Fatalf("body_budget_bytes %d, want %d", cfg.BodyBudgetBytes, tt.want)
			}
		})
	}
}

// A stream whose deferred inspection no thread could take gets the failure
// mode's answer, never an inspection on the worker.
func TestOverloadedFollowsTheFailureMode(t *testing.T) {
	for _, mode := range []FailureMode{FailClosed, FailOpen} {
		t.Run(string(mode), func(t *testing.T) {
			f, err := NewFilter([]byte(fmt.Sprintf(`{"directives":["SecRuleEngine On","SecRequestBodyAccess On",`+
				`"SecRule REQUEST_BODY \"@contains attack\" \"id:1,phase:2,deny,log\""],"failure_mode":%q,"failure_status":503}`, mode)), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			s := newBudgetStream(t, f)
			body := bytes.Repeat([]byte("attack "), 4096) // past off_worker.min_body_bytes
			s.OnRequestHeaders(post("/upload", "text/plain", len(body)))
			d := s.OnRequestBody([][]byte{body}, true)
			if d.Action != Defer {
				t.Fatalf("a %d-byte body: %+v, want Defer", len(body), d)
			}
			d = s.Overloaded()
			switch mode {
			case FailClosed:
				if d.Action != Reply || d.Reply.Status != 503 || d.Reply.Details != "corazawaf_overloaded" {
					t.Fatalf("fail closed: %+v, want the 503 failure reply", d)
				}
			case FailOpen:
				if d.Action != Continue {
					t.Fatalf("fail open: %+v, want Continue", d)
				}
			}
			if out := s.Complete(); out.Shed != ShedQueueFull || out.Blocked != nil {
				t.Fatalf("outcome %+v: want Shed %q and no verdict (nothing was inspected)", out, ShedQueueFull)
			}
		})
	}
}

// inPlace runs a deferred inspection here, as a pool thread would.
func inPlace(d Decision) Decision {
	if d.Action == Defer {
		return d.Deferred()
	}
	return d
}
