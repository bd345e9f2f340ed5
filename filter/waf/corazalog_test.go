package waf

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corazawaf/coraza/v3/debuglog"
)

// Coraza's own warnings reach Envoy's log at warning level, and SecDebugLog
// still gets Coraza's debug log, at SecDebugLogLevel, in its own file.
func TestCorazasMessagesReachEnvoysLog(t *testing.T) {
	debugFile := filepath.Join(t.TempDir(), "debug.log")
	bodyLimit := []string{"SecRequestBodyAccess On", "SecRequestBodyLimit 16", "SecRequestBodyLimitAction ProcessPartial"}
	body := []byte(strings.Repeat("a=b&", 10))
	for _, tc := range []struct {
		name      string
		extra     []string
		wantLog   string // in the filter's log, at warning level
		wantDebug bool   // Coraza's rule evaluation in the debug file
	}{
		{"default level", bodyLimit, fmt.Sprintf("%d [corazawaf] coraza: Processing request body whose size reached the configured limit", LevelWarn), false},
		{"debug file", append([]string{"SecDebugLog " + debugFile, "SecDebugLogLevel 9"}, bodyLimit...), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &recordingLogger{}
			cfg := tierConfig(t, "targeted", tc.extra...)
			e, err := NewEngine(cfg, log)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			s := NewStream(&cfg, e, log)
			sendRequest(s, post("/form", "application/x-www-form-urlencoded", len(body)), body, len(body))
			s.Complete()
			if tc.wantLog != "" && !log.contains(tc.wantLog) {
				t.Errorf("Coraza's warning not in the filter's log %q", log.lines)
			}
			debug, err := os.ReadFile(debugFile)
			if tc.wantDebug && (err != nil || !strings.Contains(string(debug), "[DEBUG] Evaluating rule") || !strings.Contains(string(debug), "rule_id=")) {
				t.Errorf("debug file without rule evaluations (%v): %.300q", err, debug)
			}
			if tc.wantDebug && log.contains("Evaluating rule") {
				t.Error("the debug log also went to the filter's log")
			}
		})
	}
}

// quietContext keeps the transaction's context always and the rules'
// context only when debug messages are on.
func TestQuietContextKeepsOnlyTheFirstContextUnlessDebugging(t *testing.T) {
	for _, tc := range []struct {
		level      debuglog.Level
		wantFields string
	}{
		{debuglog.LevelWarn, `tx_id="t1"`},
		{debuglog.LevelDebug, `tx_id="t1" rule_id=7`},
	} {
		var lines []string
		factory := func(io.Writer) debuglog.Printer {
			return func(_ debuglog.Level, message, fields string) { lines = append(lines, message+" "+fields) }
		}
		var l debuglog.Logger = quietContext{Logger: debuglog.DefaultWithPrinterFactory(factory)}
		l = l.WithLevel(tc.level).With(debuglog.Str("tx_id", "t1")).With(debuglog.Int("rule_id", 7))
		l.Warn().Msg("warned")
		if want := "warned " + tc.wantFields; len(lines) != 1 || lines[0] != want {
			t.Errorf("level %v: printed %q, want %q", tc.level, lines, want)
		}
	}
}

// A benign request puts nothing in Envoy's log at warning level or above:
// what Coraza says on every request (a macro naming a variable no rule has
// set) is chatter, logged at debug, or the log grows by megabytes a minute
// under load and its writes cost the module CPU.
func TestABenignRequestLogsNoWarning(t *testing.T) {
	body := []byte(`{"order":{"id":7,"items":[{"sku":"A-1","qty":2}],"note":"leave at the door"}}`)
	for _, tier := range []string{"targeted", "full-crs"} {
		t.Run(tier, func(t *testing.T) {
			log := &recordingLogger{}
			cfg := tierConfig(t, tier)
			e, err := NewEngine(cfg, log)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			for _, req := range []struct {
				head RequestHead
				body []byte
			}{{get("/products?page=2"), nil}, {post("/api/orders", "application/json", len(body)), body}} {
				s := NewStream(&cfg, e, log)
				if d := sendRequest(s, req.head, req.body, len(req.body)+1); d.Action == Reply {
					t.Fatalf("%s %s blocked: %+v", req.head.Method, req.head.Path, d.Reply)
				}
				s.Complete()
			}
			var loud, chatter []string
			for _, line := range log.lines {
				level, msg, _ := strings.Cut(line, " ")
				switch {
				case level >= fmt.Sprint(LevelWarn):
					loud = append(loud, line)
				case strings.Contains(msg, "key not found in collection"):
					chatter = append(chatter, line)
				}
			}
			if len(loud) > 0 {
				t.Errorf("%d lines at warning level or above for benign requests: %q", len(loud), loud)
			}
			if tier == "full-crs" && len(chatter) == 0 {
				t.Log("Coraza made no macro chatter: its text may have changed, or CRS no longer causes it")
			}
		})
	}
}
