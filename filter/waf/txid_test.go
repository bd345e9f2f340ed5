package waf

import (
	"strings"
	"testing"
)

// Transaction ids are the module's: a client that sends the same
// x-request-id twice (or another client's) gets two transactions.
func TestTransactionIDsIgnoreClientRequestID(t *testing.T) {
	cfg := tierConfig(t, "targeted")
	e := mustEngine(t, cfg)
	log := &recordingLogger{}
	seen := map[string]bool{}
	for _, clientID := range []string{"same-id", "same-id", "", "forged\n[corazawaf] transaction x allowed"} {
		req := get("/admin") // rule 101 denies: the line names both ids
		req.ClientRequestID = clientID
		req.Headers = append(req.Headers, Header{"x-request-id", clientID})
		s := NewStream(&cfg, e, log)
		d := s.OnRequestHeaders(req)
		id := s.TransactionID()
		s.Complete()
		if d.Action != Reply {
			t.Fatalf("decision %+v", d)
		}
		if id == "" || id == clientID || seen[id] {
			t.Fatalf("transaction id %q for x-request-id %q (ids so far %v)", id, clientID, seen)
		}
		seen[id] = true
		if want := "transaction " + id + " (x-request-id " + loggedRequestID(clientID) + ") interrupted"; !log.contains(want) {
			t.Fatalf("log has no line %q:\n%s", want, strings.Join(log.lines, "\n"))
		}
	}
	for _, line := range log.lines {
		if strings.Contains(line, "\n") {
			t.Fatalf("a client's x-request-id broke a log line: %q", line)
		}
	}
}

func TestLoggedRequestIDIsBounded(t *testing.T) {
	got := loggedRequestID(strings.Repeat("a", 10000))
	if len(got) > maxLoggedRequestID+8 || !strings.HasSuffix(got, `..."`) {
		t.Fatalf("logged %d bytes: %.40q", len(got), got)
	}
}
