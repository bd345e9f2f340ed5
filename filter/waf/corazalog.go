package waf

import (
	"io"
	stdlog "log"
	"os"
	"strings"

	"github.com/corazawaf/coraza/v3/debuglog"
)

// corazaLogger is the debug logger each WAF is built with. Coraza's own
// messages (a body over its limit, an argument over the limit, a body
// processor's error) go to Envoy's log at their level instead of raw to
// Envoy's stderr, where Coraza's default logger writes them; SecDebugLog
// still writes Coraza's debug log to its file, in Coraza's format, at
// SecDebugLogLevel.
//
// It also spares the rule loop Coraza's per-evaluation context: Coraza
// gives every chained rule it evaluates a logger of its own (With), whether
// or not its debug level is on, which is about 40 allocations for a benign
// GET through full CRS. Context is kept for the transaction's logger (its
// id) and dropped below it unless debug messages are on.
func corazaLogger(log Logger) debuglog.Logger {
	return quietContext{Logger: debuglog.DefaultWithPrinterFactory(printerTo(log))}
}

// printerTo routes what Coraza would print to its default output,
// standard error, to log; any other output (SecDebugLog's file) gets
// Coraza's own printer.
func printerTo(log Logger) debuglog.PrinterFactory {
	return func(w io.Writer) debuglog.Printer {
		if w != os.Stderr {
			return filePrinter(w)
		}
		return func(lvl debuglog.Level, message, fields string) {
			level := envoyLevel(lvl)
			if level > LevelDebug && chatter[message] {
				level = LevelDebug
			}
			if log == nil || !log.Enabled(level) {
				return
			}
			msg := "[corazawaf] coraza: " + message
			if fields = strings.TrimSpace(fields); fields != "" {
				msg += " " + fields
			}
			log.Log(level, msg)
		}
	}
}

// chatter are Coraza's warnings that say nothing an operator can act on
// and that CRS makes on every request: a macro naming a variable no rule
// has set expands to its own text (CRS's 943110 and 943120 do on a benign
// GET). At warning level they were two lines in Envoy's log per request,
// megabytes a minute under load and a share of the module's CPU; they go
// to debug.
var chatter = map[string]bool{
	"key not found in collection, returning the original text": true,
}

// filePrinter writes SecDebugLog's file in the layout Coraza's default
// logger uses: a timestamp, the level in brackets, the message, the fields.
func filePrinter(w io.Writer) debuglog.Printer {
	l := stdlog.New(w, "", stdlog.LstdFlags)
	return func(lvl debuglog.Level, message, fields string) {
		l.Printf("[%s] %s %s", lvl.String(), message, fields)
	}
}

// envoyLevel maps Coraza's levels onto the filter's.
func envoyLevel(lvl debuglog.Level) Level {
	switch {
	case lvl <= debuglog.LevelError:
		return LevelError
	case lvl == debuglog.LevelWarn:
		return LevelWarn
	case lvl == debuglog.LevelInfo:
		return LevelInfo
	default:
		return LevelDebug
	}
}

// quietContext keeps a logger's first context (the transaction's id) and,
// unless debug messages are on, none after it.
type quietContext struct {
	debuglog.Logger
	hasContext bool
}

func (q quietContext) With(fs ...debuglog.ContextField) debuglog.Logger {
	if q.hasContext && !q.Logger.Debug().IsEnabled() {
		return q
	}
	return quietContext{Logger: q.Logger.With(fs...), hasContext: true}
}

func (q quietContext) WithOutput(w io.Writer) debuglog.Logger {
	return quietContext{Logger: q.Logger.WithOutput(w), hasContext: q.hasContext}
}

func (q quietContext) WithLevel(lvl debuglog.Level) debuglog.Logger {
	return quietContext{Logger: q.Logger.WithLevel(lvl), hasContext: q.hasContext}
}
