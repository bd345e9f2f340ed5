package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/envoyconfig"
)

// Envoy keeps a client's x-request-id here (no use_remote_address): two
// requests that send the same one still get two transactions, and the log
// names the client's id as a field of its own.
func TestTransactionIDIsNotTheClientRequestID(t *testing.T) {
	p := startProxy(t, proxyOptions{config: `{"directives":[` + tierDirectives(t, "headers-only") + `]}`})
	for range 2 {
		p.do(t, request{path: "/admin", headers: map[string]string{"x-request-id": "client-chosen"}})
	}
	var entries []envoyconfig.AccessLogEntry
	eventually(t, "two access log entries", func() bool {
		entries = readAccessLog(t, p.accLog)
		return len(entries) >= 2
	})
	ids := map[string]bool{}
	for _, e := range entries {
		id, _ := e.WAF["transaction_id"].(string)
		if e.RequestID != "client-chosen" || id == "" || id == e.RequestID || ids[id] {
			t.Fatalf("request_id %q, transaction_id %q (seen %v): want the client's id kept and a new transaction id", e.RequestID, id, ids)
		}
		ids[id] = true
		line := "transaction " + id + ` (x-request-id "client-chosen") interrupted by rule 101`
		eventually(t, "the interruption logged with both ids", func() bool { return strings.Contains(p.log(t), line) })
	}
}

func readAccessLog(t *testing.T, path string) []envoyconfig.AccessLogEntry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var entries []envoyconfig.AccessLogEntry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e envoyconfig.AccessLogEntry
		if json.Unmarshal([]byte(line), &e) == nil {
			entries = append(entries, e)
		}
	}
	return entries
}
