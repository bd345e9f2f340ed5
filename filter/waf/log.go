package waf

// Level is a log level, mapped by the ABI binding onto Envoy's.
type Level int

// Log levels, in increasing severity.
const (
	LevelDebug Level = iota
	LevelInfo
	LevelWarn
	LevelError
)

// Logger writes to Envoy's log. Enabled lets callers skip formatting a
// message Envoy would drop.
type Logger interface {
	Log(level Level, msg string)
	Enabled(level Level) bool
}

// logAt writes msg at level when log is set and Envoy keeps that level.
func logAt(log Logger, level Level, msg string) {
	if log != nil && log.Enabled(level) {
		log.Log(level, msg)
	}
}
