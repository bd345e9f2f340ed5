package waf

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// paddedJSON is a JSON object of about size bytes whose last field holds
// payload.
func paddedJSON(size int, payload string) []byte {
	var b strings.Builder
	b.WriteString(`{`)
	for i := 0; b.Len() < size-len(payload)-40; i++ {
		fmt.Fprintf(&b, `"field%d":"value number %d",`, i, i)
	}
	fmt.Fprintf(&b, `"last":%q}`, payload)
	return []byte(b.String())
}

// runDeferring drives a request like the ABI binding with an offload pool:
// a Defer decision's work runs on another goroutine, and the hooks wait.
func runDeferring(t *testing.T, cfg Config, e *Engine, body []byte) (first, final Decision) {
	t.Helper()
	s := NewStream(&cfg, e, nil)
	defer s.Complete()
	if d := s.OnRequestHeaders(post("/api", "application/json", len(body))); d.Action != Hold {
		t.Fatalf("headers: %+v", d)
	}
	first = s.OnRequestBody([][]byte{body}, true)
	final = first
	if first.Action == Defer {
		done := make(chan Decision)
		go func() { done <- first.Deferred() }()
		final = <-done
	}
	return first, final
}

func TestPhaseTwoOfLargeBodiesIsDeferredWithTheSameVerdict(t *testing.T) {
	fullCRS := tierConfig(t, "full-crs")
	e := mustEngine(t, fullCRS)
	inPlace := fullCRS
	inPlace.OffWorker.Enabled = ptr(false)
	tests := []struct {
		name      string
		cfg       Config
		body      []byte
		wantFirst Action
		wantFinal Action
		wantRule  int
	}{
		{"small benign body inspected in place", fullCRS, paddedJSON(1000, "hello"), Continue, Continue, 0},
		{"small attack inspected in place", fullCRS, paddedJSON(1000, "1' UNION SELECT password FROM users--"), Reply, Reply, 949110},
		{"large benign body deferred", fullCRS, paddedJSON(20000, "hello"), Defer, Continue, 0},
		{"large attack deferred", fullCRS, paddedJSON(20000, "1' UNION SELECT password FROM users--"), Defer, Reply, 949110},
		{"large attack, off_worker disabled", inPlace, paddedJSON(20000, "1' UNION SELECT password FROM users--"), Reply, Reply, 949110},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, final := runDeferring(t, tt.cfg, e, tt.body)
			if first.Action != tt.wantFirst || final.Action != tt.wantFinal {
				t.Fatalf("decisions %v then %v, want %v then %v", first.Action, final.Action, tt.wantFirst, tt.wantFinal)
			}
			if tt.wantRule != 0 && final.Reply.Verdict.RuleID != tt.wantRule {
				t.Fatalf("blocked by rule %d, want %d", final.Reply.Verdict.RuleID, tt.wantRule)
			}
			if final.Deferred != nil || final.Action == Defer {
				t.Fatal("a deferred inspection must end with a decision to act on")
			}
		})
	}
}

// The write that reaches the body limit makes Coraza run phase 2 (or
// reject the body): it is deferred too, with a copy of the frame's kept part.
func TestTheFrameReachingTheBodyLimitIsDeferred(t *testing.T) {
	for _, tt := range []struct {
		name       string
		action     string
		frame      string // the second frame; the limit keeps its first 40 bytes
		wantAction Action
		wantStatus int
	}{
		{"ProcessPartial inspects the kept part", "ProcessPartial", "0123456789evil" + strings.Repeat("b", 50), Reply, 403},
		{"ProcessPartial ignores what is past the limit", "ProcessPartial", strings.Repeat("b", 50) + "evil", Continue, 0},
		{"Reject answers 413", "Reject", strings.Repeat("b", 64), Reply, 413},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Directives: []string{"SecRuleEngine On", "SecRequestBodyAccess On",
				"SecRequestBodyLimit 100", "SecRequestBodyLimitAction " + tt.action,
				// A body without a body processor reaches REQUEST_BODY only when forced.
				`SecAction "id:1,phase:1,pass,nolog,ctl:forceRequestBodyVariable=On"`,
				`SecRule REQUEST_BODY "@contains evil" "id:2,phase:2,deny,status:403"`}}
			cfg.applyDefaults()
			cfg.OffWorker.MinBodyBytes = 1
			e := mustEngine(t, cfg)
			s := NewStream(&cfg, e, nil)
			defer s.Complete()
			s.OnRequestHeaders(post("/upload", "application/octet-stream", 60+len(tt.frame)))
			if d := s.OnRequestBody([][]byte{bytes.Repeat([]byte("a"), 60)}, false); d.Action != Hold {
				t.Fatalf("first frame: %+v", d)
			}
			frame := []byte(tt.frame)
			d := s.OnRequestBody([][]byte{frame}, false)
			if d.Action != Defer {
				t.Fatalf("frame reaching the limit: %+v, want Defer", d)
			}
			copy(frame, bytes.Repeat([]byte("x"), len(frame))) // Envoy reuses its buffers after the hook
			final := d.Deferred()
			if final.Action != tt.wantAction || (tt.wantStatus != 0 && final.Reply.Status != tt.wantStatus) {
				t.Fatalf("deferred decision %+v, want %v %d", final, tt.wantAction, tt.wantStatus)
			}
			if tt.wantAction == Continue {
				if d := s.OnRequestBody([][]byte{[]byte("evil")}, true); d.Action != Continue {
					t.Fatalf("frames after ProcessPartial's verdict pass: %+v", d)
				}
			}
		})
	}
}

func TestOffWorkerConfig(t *testing.T) {
	tests := []struct {
		json    string
		wantErr string
		check   func(OffWorker) bool
	}{
		{`{}`, "", func(o OffWorker) bool {
			return *o.Enabled && o.MinBodyBytes == DefaultOffWorkerMinBodyBytes && o.Threads == 0
		}},
		{`{"off_worker":{"enabled":false}}`, "", func(o OffWorker) bool { return !*o.Enabled }},
		{`{"off_worker":{"min_body_bytes":1,"threads":3}}`, "", func(o OffWorker) bool { return o.MinBodyBytes == 1 && o.Threads == 3 }},
		{`{"off_worker":{"min_body_bytes":-1}}`, "off_worker.min_body_bytes -1", nil},
		{`{"off_worker":{"threads":-2}}`, "off_worker.threads -2", nil},
		{`{"off_worker":{"threads":100000}}`, "off_worker.threads 100000", nil},
		{`{"off_worker":{"min_bytes":1}}`, `unknown field "min_bytes"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			c, err := ParseConfig([]byte(tt.json))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(c.OffWorker) {
				t.Fatalf("parsed %+v, %v", c.OffWorker, err)
			}
		})
	}
}
