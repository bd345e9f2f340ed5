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
