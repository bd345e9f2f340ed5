package plan

// SLORule decides when a p99 objective is met at its bound (the capacity
// knee, or the knee of the next larger objective) without a search of its
// own. The bound is where a proxy's p99 moves most from run to run, so the
// rule decides how far one run there is trusted.
type SLORule string

const (
	// SLOEveryRun: every valid run at the bound, in the capacity search
	// and in the larger objectives' searches, kept its p99 within the
	// objective. When one did not, that run is the objective's first step
	// and its search goes on below the bound.
	SLOEveryRun SLORule = "every_run"
	// SLOLastRun: the bounding search's last passing run at the bound kept
	// its p99 within the objective; earlier runs there are not consulted.
	// The sweeps made before 2026-12-06 used it, and replay with it.
	SLOLastRun SLORule = "last_run"
)

// valid reports whether r is one of the rules.
func (r SLORule) valid() bool {
	return r == SLOEveryRun || r == SLOLastRun
}
