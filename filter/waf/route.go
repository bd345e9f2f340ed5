package waf

import (
	"fmt"

	"github.com/wafsweep/wafsweep/filter/accel"
)

// Route is a compiled per-route configuration.
type Route struct {
	mode   Mode
	engine *Engine       // the route's own rule set, when it has directives
	bodies *StreamBodies // the route's stream_bodies; nil: the listener's
}

// NewRoute builds a per-route configuration. A route with directives gets
// its own rule set, built with the same defaults as the listener's and
// accelerated as the route's configuration says.
func NewRoute(rc RouteConfig, log Logger) (*Route, error) {
	r := &Route{mode: rc.Mode, bodies: rc.StreamBodies}
	if len(rc.Directives) == 0 {
		return r, nil
	}
	e, err := newEngine(engineSpec{directives: rc.Directives, mode: rc.Mode, logRules: true, log: log, accel: accel.Mode(rc.Acceleration)})
	if err != nil {
		return nil, fmt.Errorf("per-route rule set: %w", err)
	}
	r.engine = e
	return r, nil
}

// Close releases the route's own rule set, if it has one (Engine.Close).
func (r *Route) Close() {
	if r.engine != nil {
		r.engine.Close()
	}
}

// Engine picks the rule set for a stream on this route given the listener's
// engine; nil means the WAF is off for the route.
func (r *Route) Engine(listener *Engine) (*Engine, error) {
	switch {
	case r.mode == ModeOff:
		return nil, nil
	case r.engine != nil:
		return r.engine, nil
	case listener == nil:
		return nil, nil
	case r.mode == ModeDetect:
		return listener.DetectOnly()
	default:
		return listener, nil
	}
}
