// Package plan holds the sweep plan and the names used everywhere: flavors
// (what sits in front of the backend), rule tiers (WAF flavors only; other
// flavors use the tier "none"), request shapes with their generated bodies,
// and the configurations (flavor/tier/shape) a sweep measures, in the order
// each round measures them.
//
// Plans load from JSON over the defaults; durations are Go duration strings:
//
//	{"flavors": ["envoy", "waf"], "ladder": [1000, 2000, 4000], "measure": "30s", "rounds": 3}
//
// floor_rps (default 50; 0 turns it off) lets the knee search descend below
// the ladder when its first rate already fails, halving the rate down to the
// floor, so a slow configuration still gets a knee (see package knee).
package plan
