package waf

import (
	"bytes"
	"os"
	"testing"
)

// A transaction whose body spilled to a file leaves nothing in TMPDIR once
// released, as after a panic, without the logging phase; Release is
// idempotent and Complete after it is a no-op.
func TestReleaseRemovesSpilledBody(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // Coraza reads it when the rule set is built
	cfg := tierConfig(t, "targeted", "SecRequestBodyInMemoryLimit 131072")
	cfg.OffWorker.Enabled = ptr(false)
	e := mustEngine(t, cfg)
	s := NewStream(&cfg, e, nil)
	body := bytes.Repeat([]byte("a=1&"), 1<<18) // 1 MiB
	if d := s.OnRequestHeaders(post("/upload", "application/x-www-form-urlencoded", len(body))); d.Action != Hold {
		t.Fatalf("headers: %+v", d)
	}
	if d := s.OnRequestBody([][]byte{body}, false); d.Action != Hold {
		t.Fatalf("body: %+v", d)
	}
	if n := entries(t, tmp); n == 0 {
		t.Fatal("a 1 MiB body did not spill to TMPDIR: the test proves nothing")
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if n := entries(t, tmp); n != 0 {
		t.Fatalf("%d files left in TMPDIR after Release", n)
	}
	if err := s.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	s.Complete()
}

func entries(t *testing.T, dir string) int {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}
