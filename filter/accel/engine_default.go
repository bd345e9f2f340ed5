//go:build !corazawaf_hyperscan

package accel

// DefaultEngine is the engine New uses when Options.Engine is nil. Builds
// without the corazawaf_hyperscan tag use the pure-Go engine.
func DefaultEngine(exprs []string) (Engine, error) { return PureGoEngine(exprs) }
