package waf

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/corazawaf/coraza/v3"
	"github.com/corazawaf/coraza/v3/experimental"
	"github.com/corazawaf/coraza/v3/types"

	"github.com/wafsweep/wafsweep/filter/accel"
	"github.com/wafsweep/wafsweep/filter/internal/ownkeys"
)

// Engine is a built rule set: a Coraza WAF plus what the glue needs to know
// about it. It is immutable and safe for concurrent use by many streams.
type Engine struct {
	waf    coraza.WAF
	mode   Mode
	limits BodyLimits
	// accel is the accelerator installed in waf, nil when acceleration is off.
	accel *accel.Accelerator
	// responseRules is set when a rule runs in phase 3, 4 or 5; without
	// one, only an audited transaction needs its response phases.
	responseRules bool
	audit         auditProbe
	// detect is the same rule set under SecRuleEngine DetectionOnly, for
	// routes that run the listener's rules without blocking (see
	// DetectOnly); the engine itself when it only detects.
	detect *Engine
}

// engineSpec is everything an Engine is built from.
type engineSpec struct {
	directives []string
	mode       Mode
	auditLog   string
	auditMode  string
	logRules   bool
	log        Logger
	accel      accel.Mode
}

// defaultDirectives come before the user's. SecAuditEngine is set explicitly
// because Coraza's zero value is On: every transaction would then build an
// audit record and drop it (about a quarter of the headers-only tier's cost).
var defaultDirectives = []string{"SecAuditEngine Off"}

// NewEngine builds the rule set of a filter configuration, and its
// detect-only twin: a route may ask for the listener's rules in detect mode
// (RouteConfig without directives), and Envoy loads such routes apart from
// the listener, so the twin is built now, at config load on Envoy's main
// thread, never on a worker by the first request of such a route. With
// Coraza's memoized expressions the twin costs a fraction of the first
// build (about 40 ms and under a megabyte for the full CRS; 0.3 s
// accelerated). The error carries Coraza's own message (for example the
// unknown directive and its line).
func NewEngine(cfg Config, log Logger) (*Engine, error) {
	spec := engineSpec{
		directives: cfg.Directives,
		mode:       cfg.Mode,
		auditLog:   cfg.AuditLog,
		auditMode:  cfg.AuditEngine,
		logRules:   *cfg.LogMatchedRules,
		log:        log,
		accel:      accel.Mode(cfg.Acceleration),
	}
	e, err := newEngine(spec)
	if err != nil || e.mode == ModeDetect {
		return e, err
	}
	spec.mode = ModeDetect
	if e.detect, err = newEngine(spec); err != nil {
		e.Close()
		return nil, fmt.Errorf("building the detect-only twin of the rule set: %w", err)
	}
	return e, nil
}

func newEngine(spec engineSpec) (*Engine, error) {
	text := spec.directiveText()
	acc, err := newAccelerator(spec, text)
	if err != nil {
		return nil, err
	}
	var root fs.FS = NewRulesFS()
	if acc != nil {
		// The generated rules go first, so that they are the first
		// rules of phase 2; the removals last, after every rule.
		text = acc.Directives() + text + "\n" + acc.Trailer()
		root = acc.RootFS()
	}
	// Before everything, the accelerator's collectors included: the rules
	// that give each value a key of its own, without which Coraza's
	// transformation cache lets a value be read in place of another.
	text = ownkeys.Directives() + text
	wafCfg := coraza.NewWAFConfig().
		WithRootFS(root).
		WithDebugLogger(corazaLogger(spec.log)).
		WithDirectives(text)
	if spec.logRules && spec.log != nil {
		wafCfg = wafCfg.WithErrorCallback(matchedRuleLogger(spec.log))
	}
	w, err := coraza.NewWAF(wafCfg)
	if acc != nil {
		acc.Built()
	}
	if err != nil {
		return nil, fmt.Errorf("coraza rejected the directives: %w", err)
	}
	limits, err := readBodyLimits(w)
	if err != nil {
		return nil, err
	}
	responseRules, err := hasResponseRules(w)
	if err != nil {
		return nil, err
	}
	if acc != nil {
		ids, err := ruleIDs(w)
		if err != nil {
			return nil, err
		}
		acc.UseRuleIDs(ids)
	}
	audit, err := newAuditProbe(w)
	if err != nil {
		return nil, err
	}
	e := &Engine{waf: w, mode: spec.mode, limits: limits, accel: acc, responseRules: responseRules, audit: audit}
	if e.mode == ModeDetect {
		e.detect = e
	}
	return e, nil
}

// newAccelerator prepares the accelerator of an engine, or returns nil
// when acceleration is off.
func newAccelerator(spec engineSpec, directives string) (*accel.Accelerator, error) {
	if spec.accel == "" || spec.accel == accel.Off {
		return nil, nil
	}
	acc, err := accel.New(accel.Options{
		Mode: spec.accel, Root: NewRulesFS(), Directives: directives, Log: accelLogger{spec.log},
	})
	if err != nil {
		return nil, fmt.Errorf("acceleration: %w", err)
	}
	accelLogger{spec.log}.Info("[corazawaf] " + acc.Summary())
	return acc, nil
}

// accelLogger adapts the filter's Logger to the accelerator's.
type accelLogger struct{ log Logger }

func (l accelLogger) Warn(msg string) { logAt(l.log, LevelWarn, msg) }
func (l accelLogger) Info(msg string) { logAt(l.log, LevelInfo, msg) }

// Accelerator returns the engine's accelerator (nil when off).
func (e *Engine) Accelerator() *accel.Accelerator { return e.accel }

// finishTransaction lets the accelerator drop a closed transaction's
// state; it returns the shadow-mode disagreements found in it.
func (e *Engine) finishTransaction(tx types.Transaction) int {
	if e.accel == nil {
		return 0
	}
	return e.accel.Finish(tx)
}

func (s engineSpec) directiveText() string {
	lines := append([]string(nil), defaultDirectives...)
	lines = append(lines, s.directives...)
	if s.mode == ModeDetect {
		lines = append(lines, "SecRuleEngine DetectionOnly")
	}
	if s.auditLog != "" {
		lines = append(lines,
			"SecAuditEngine "+s.auditMode,
			"SecAuditLogType Serial",
			"SecAuditLogFormat JSON",
			"SecAuditLog "+strconv.Quote(s.auditLog),
		)
	}
	return strings.Join(lines, "\n")
}

// Limits reports the rule set's body inspection settings.
func (e *Engine) Limits() BodyLimits { return e.limits }

// Mode reports whether the engine blocks or only detects.
func (e *Engine) Mode() Mode { return e.mode }

// DetectOnly returns the same rule set with SecRuleEngine DetectionOnly,
// for routes that run the listener's rules without blocking. NewEngine
// builds it; engines of per-route rule sets have none, since routes never
// ask for one (a route's own rules are built in the route's mode).
func (e *Engine) DetectOnly() (*Engine, error) {
	if e.detect == nil {
		return nil, errNoDetectTwin
	}
	return e.detect, nil
}

// errNoDetectTwin answers DetectOnly on an engine built without a twin.
var errNoDetectTwin = errors.New("this rule set has no detect-only twin (only a listener's rule set has one)")

// Close releases the rule set's share of Coraza's process-wide cache of
// compiled expressions and automata, which rule sets with the same rules
// share: without it, every rule set Envoy ever loaded (each config update
// with changed rules) would stay in memory. Call it when no stream will
// start on the engine; streams still running keep working.
func (e *Engine) Close() {
	if e.detect != nil && e.detect != e {
		e.detect.Close()
	}
	if c, ok := e.waf.(experimental.WAFCloser); ok {
		_ = c.Close() // Coraza's Close only releases cache entries: it cannot fail
	}
}

// needsResponse reports whether a transaction's response phases can change
// anything: a verdict (a rule of phases 3 to 5 reads the response) or its
// audit record. Without rules that read them, phases 3 and 4 would only fill
// collections nobody reads, and hold response bodies for nothing.
func (e *Engine) needsResponse(tx types.Transaction) bool {
	return e.responseRules || e.audit.audited(tx)
}

// newTransaction starts a transaction with an id of the module's own (see
// txIDSource).
func (e *Engine) newTransaction() types.Transaction {
	return e.waf.NewTransactionWithID(transactionIDs.next())
}

// matchedRuleLogger writes ModSecurity-style lines, the form go-ftw and
// log pipelines parse ([id "942100"] [msg "..."] ...).
func matchedRuleLogger(log Logger) func(types.MatchedRule) {
	return func(mr types.MatchedRule) {
		level := LevelInfo
		if mr.Rule().Severity() <= types.RuleSeverityError {
			level = LevelWarn
		}
		logAt(log, level, mr.ErrorLog())
	}
}
