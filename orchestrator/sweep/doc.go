// Package sweep runs a plan: for every round and configuration it deploys
// the configuration on a target, pre-checks it, walks the knee search step
// by step (each step a warm-up, a measured constant-throughput window and a
// cool-down), and records every finished step in steps.csv before starting
// the next. knees.csv, the plots and report.md are rebuilt from steps.csv
// after each configuration, so an interrupted sweep keeps all it measured
// and the same command resumes it: finished steps are replayed into the
// knee search instead of being measured again.
package sweep
