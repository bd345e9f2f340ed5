package waf

import "fmt"

// Filter is a listener's filter configuration, compiled: the settings and
// the rule set every stream on it starts from.
type Filter struct {
	settings Config
	engine   *Engine // nil when mode is off
	log      Logger
	budget   *bodyBudget
}

// NewFilter parses and builds a filter configuration. Errors carry the
// reason in words a user can act on, including Coraza's own messages.
func NewFilter(configJSON []byte, log Logger) (*Filter, error) {
	cfg, err := ParseConfig(configJSON)
	if err != nil {
		return nil, err
	}
	f := &Filter{settings: cfg, log: log, budget: newBodyBudget(cfg.BodyBudgetBytes)}
	if cfg.Mode == ModeOff {
		return f, nil
	}
	if f.engine, err = NewEngine(cfg, log); err != nil {
		return nil, err
	}
	return f, nil
}

// Settings returns the parsed configuration.
func (f *Filter) Settings() Config { return f.settings }

// Close releases the rule set (Engine.Close) when Envoy drops the
// configuration.
func (f *Filter) Close() {
	if f.engine != nil {
		f.engine.Close()
	}
}

// Engine returns the listener's rule set (nil when the WAF is off).
func (f *Filter) Engine() *Engine { return f.engine }

// NewStream starts a stream; route is the most specific per-route
// configuration, or nil.
func (f *Filter) NewStream(route *Route) (*Stream, error) {
	engine := f.engine
	if route != nil {
		var err error
		if engine, err = route.Engine(f.engine); err != nil {
			return nil, fmt.Errorf("per-route rule set: %w", err)
		}
	}
	s := NewStream(&f.settings, engine, f.log)
	s.budget = f.budget
	if route != nil && route.bodies != nil {
		s.bodies = route.bodies
	}
	return s, nil
}

// BodyBytesHeld is the number of body bytes the filter config's streams
// hold for inspection now (see Config.BodyBudgetBytes).
func (f *Filter) BodyBytesHeld() int64 { return f.budget.Held() }
