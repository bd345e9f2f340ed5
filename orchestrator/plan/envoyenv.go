package plan

import "github.com/wafsweep/wafsweep/orchestrator/internal/envvars"

// goRuntimeEnv are the environment variables the Go runtime reads that
// change what the corazawaf module costs: its collector's pacing (GOGC,
// GOMEMLIMIT), its settings (GODEBUG) and its processors (GOMAXPROCS).
var goRuntimeEnv = []string{"GOGC", "GOMEMLIMIT", "GODEBUG", "GOMAXPROCS"}

// EnvoyEnviron is what a sweep adds to the environment Envoy inherits: each
// of goRuntimeEnv set empty, which the Go runtime reads as unset, so that
// a value in the shell that runs the sweep cannot change the figures
// without the plan (and so the metadata and the sweep's identity) saying
// so; then the plan's own EnvoyEnv, which wins where it names the same
// variable (a process's later entry does).
func (p Plan) EnvoyEnviron() []string {
	env := make([]string, 0, len(goRuntimeEnv)+len(p.EnvoyEnv))
	for _, k := range goRuntimeEnv {
		env = append(env, k+"=")
	}
	return append(env, p.EnvoyEnv...)
}

// checkEnvoyEnv reports entries that are not KEY=VALUE and keys given twice.
func checkEnvoyEnv(env []string) []error {
	return envvars.Check("envoy_env", "GOGC=400", env)
}
