package e2e

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// spillBody is 1 MiB of form fields: past the 128 KiB in-memory limit the
// rule set below sets, Coraza writes the body to a file in TMPDIR.
var spillBody = strings.Repeat("a=1&", 1<<18)

// spillingProxy runs the test module with an Envoy whose TMPDIR is tmp.
func spillingProxy(t *testing.T, tmp string) *proxy {
	config := `{"failure_mode":"closed","failure_status":503,"test_hooks":{"panic_header":"x-corazawaf-panic"},` +
		`"off_worker":{"min_body_bytes":1},"directives":[` + tierDirectives(t, "targeted") +
		`,"SecRequestBodyInMemoryLimit 131072",` + responseDirectives + "]}"
	return startProxy(t, proxyOptions{config: config, module: modulePath(t, "CORAZAWAF_TEST_MODULE", "test/libcorazawaf.so"),
		env: []string{"TMPDIR=" + tmp}})
}

func tmpEntries(t *testing.T, dir string) []string {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name())
	}
	return names
}

// The transaction is closed whatever ends the stream, a recovered panic
// included: the file its spilled body went to does not outlive it.
func TestPanicLeavesNoSpilledBody(t *testing.T) {
	tmp := t.TempDir()
	p := spillingProxy(t, tmp)
	t.Run("the body spills", func(t *testing.T) {
		// Proves the rule set spills: hold a 1 MiB body open (no last
		// chunk), see its file, then reset the stream.
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.port))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /upload HTTP/1.1\r\nHost: shop.wafsweep.test\r\nUser-Agent: wafsweep-e2e/1.0\r\nAccept: */*\r\n"+
			"Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(spillBody), spillBody)
		eventually(t, "a spilled body file in TMPDIR", func() bool { return len(tmpEntries(t, tmp)) > 0 })
		conn.Close()
		eventually(t, "TMPDIR empty after the reset", func() bool { return len(tmpEntries(t, tmp)) == 0 })
	})
	for _, step := range []string{"request_body", "off_worker", "response_headers", "response_body", "stream_complete"} {
		t.Run(step, func(t *testing.T) {
			resp := p.do(t, request{path: "/upload?reply_ct=text/plain&reply_body=hello", body: spillBody,
				contentType: "application/x-www-form-urlencoded", headers: map[string]string{"x-corazawaf-panic": step}})
			eventually(t, "the panic logged", func() bool { return strings.Contains(p.log(t), "panic in "+step+" hook") })
			deadline := time.Now().Add(5 * time.Second)
			for len(tmpEntries(t, tmp)) > 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if left := tmpEntries(t, tmp); len(left) > 0 {
				t.Fatalf("status %d; after a panic in %s, TMPDIR keeps %v: the transaction was not closed", resp.status, step, left)
			}
		})
	}
}
