package backend

import "os"

// HelperProcessEnv, set to "1" in a test binary's environment, makes
// ServeIfHelper run that binary as `wafsweep backend`: tests start the
// backend as a process of its own (os.Args[0] as the target's backend
// command), as a sweep runs it, without building wafsweep.
const HelperProcessEnv = "WAFSWEEP_TEST_BACKEND_HELPER"

// ServeIfHelper, called first in a TestMain, serves as the backend and
// exits when HelperProcessEnv is set; otherwise it returns.
func ServeIfHelper() {
	if os.Getenv(HelperProcessEnv) == "1" {
		os.Exit(Main(os.Args[1:]))
	}
}
