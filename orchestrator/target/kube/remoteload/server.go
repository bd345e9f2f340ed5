package remoteload

import (
	"context"
	"encoding/gob"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
)

// RunFunc runs one step of one run or more sent together; loadgen.RunAll
// is the one the pod serves.
type RunFunc func(ctx context.Context, specs []loadgen.Spec) (loadgen.Result, []loadgen.Result, error)

// Handler serves loadgen.RunAll: the load generator pod's API.
func Handler() http.Handler { return Serve(loadgen.RunAll) }

// Serve serves run on RunPath, and HealthPath. Steps run one at a time:
// two would share the pod's CPUs and each would measure the other. Tests
// of the targets serve a stand-in run through the real protocol.
func Serve(run RunFunc) http.Handler {
	var one sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("POST "+RunPath, func(w http.ResponseWriter, r *http.Request) {
		var st step
		if err := gob.NewDecoder(r.Body).Decode(&st); err != nil || len(st.Runs) == 0 {
			http.Error(w, fmt.Sprintf("reading the step: %d runs, %v", len(st.Runs), err), http.StatusBadRequest)
			return
		}
		if !one.TryLock() {
			http.Error(w, "a step is already running", http.StatusConflict)
			return
		}
		defer one.Unlock()
		specs, cleanup, err := st.localCAs()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer cleanup()
		serveRun(w, r, run, specs)
	})
	return mux
}

// localCAs writes the step's CAs into a directory of the step's own and
// points its runs at them; cleanup removes the directory.
func (st step) localCAs() (specs []loadgen.Spec, cleanup func(), err error) {
	if len(st.CAs) == 0 {
		return st.Runs, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "wafsweep-step-ca-")
	if err != nil {
		return nil, nil, fmt.Errorf("the step's CA: %w", err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	local := map[string]string{}
	for name, pem := range st.CAs {
		path := filepath.Join(dir, fmt.Sprintf("ca-%d.pem", len(local)))
		if err := os.WriteFile(path, pem, 0o644); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("the step's CA: %w", err)
		}
		local[name] = path
	}
	specs = slices.Clone(st.Runs)
	for i, s := range specs {
		if s.CAFile == "" {
			continue
		}
		path, ok := local[s.CAFile]
		if !ok {
			cleanup()
			return nil, nil, fmt.Errorf("run %d names CA %s, which the step does not carry", i, s.CAFile)
		}
		specs[i].CAFile = path
	}
	return specs, cleanup, nil
}

// serveRun runs the step, streaming its edges and then its outcome. The
// request's context ends the run when the client goes away.
func serveRun(w http.ResponseWriter, r *http.Request, run RunFunc, specs []loadgen.Spec) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/x-gob")
	w.WriteHeader(http.StatusOK)
	enc := gob.NewEncoder(w)
	var mu sync.Mutex // edges arrive from loadgen's goroutine
	send := func(m message) {
		mu.Lock()
		defer mu.Unlock()
		// A client that left ends the request's context, and the run
		// with it; a failed write has nothing left to tell.
		if enc.Encode(m) == nil && flusher != nil {
			flusher.Flush()
		}
	}
	specs[0].OnEdge = func(e loadgen.Edge, at time.Time) { send(message{Kind: kindEdge, Edge: e, At: at}) }
	res, each, err := run(r.Context(), specs)
	if err != nil {
		send(message{Kind: kindError, Err: err.Error()})
		return
	}
	send(message{Kind: kindResult, Result: &res, Each: each})
}
