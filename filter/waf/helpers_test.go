package waf

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// recordingLogger keeps every line, for tests that check what reaches Envoy's log.
type recordingLogger struct {
	mu    sync.Mutex
	lines []string
}

func (l *recordingLogger) Log(level Level, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("%d %s", level, msg))
}

func (l *recordingLogger) Enabled(Level) bool { return true }

func (l *recordingLogger) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// rulesetPath is the absolute path of a tier file in rulesets/.
func rulesetPath(t testing.TB, tier string) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "rulesets", tier+".conf")
}

// tierConfig is a filter configuration that includes a tier file.
func tierConfig(t testing.TB, tier string, extra ...string) Config {
	t.Helper()
	cfg := Config{Directives: append([]string{"Include " + rulesetPath(t, tier)}, extra...)}
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func mustEngine(t testing.TB, cfg Config) *Engine {
	t.Helper()
	e, err := NewEngine(cfg, nil)
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	return e
}

func get(path string) RequestHead {
	return RequestHead{
		Conn:   Connection{ClientIP: "127.0.0.1", ClientPort: 40000, ServerIP: "127.0.0.1", ServerPort: 8080},
		Method: "GET", Path: path, Authority: "shop.test", Protocol: "HTTP/1.1",
		Headers:     []Header{{"user-agent", "wafsweep-test/1.0"}, {"accept", "*/*"}},
		EndOfStream: true,
	}
}

func post(path, contentType string, bodyLen int) RequestHead {
	r := get(path)
	r.Method = "POST"
	r.EndOfStream = false
	r.Headers = append(r.Headers, Header{"content-type", contentType}, Header{"content-length", fmt.Sprint(bodyLen)})
	return r
}

// sendRequest drives a request through a stream in frames of the given
// size and runs a deferred inspection in place (the binding runs it on an
// inspection thread; it is the request's cost all the same).
func sendRequest(s *Stream, req RequestHead, body []byte, frame int) Decision {
	d := s.OnRequestHeaders(req)
	for off := 0; d.Action == Hold && off < len(body); off += frame {
		end := min(off+frame, len(body))
		d = s.OnRequestBody([][]byte{body[off:end]}, end == len(body))
	}
	if d.Action == Defer {
		d = d.Deferred()
	}
	return d
}
