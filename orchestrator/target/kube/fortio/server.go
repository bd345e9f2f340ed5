package fortio

import (
	"io"
	"net/http"

	"fortio.org/fortio/rapi"
	"fortio.org/log"
)

// Handler is the Fortio server's REST API (run, status, stop and the saved
// results under /fortio/data/) plus /healthz: Fortio's own rapi package,
// without its web UI, whose command pulls modules the project cannot use.
// Results are saved in dataDir.
func Handler(dataDir string) http.Handler {
	// Per-request logging would cost the load generator CPU during steps.
	log.SetLogLevelQuiet(log.Warning)
	mux := http.NewServeMux()
	rapi.AddHandlers(mux, "", "/fortio/", dataDir)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})
	return mux
}
