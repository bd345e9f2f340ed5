package cgroup

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/procstat"
)

// Reading is the agent's answer: the container's sample and the agent's
// own CPUs (the shared pool), from which exclusivity is judged.
type Reading struct {
	Sample
	Writes
	SharedCPUs string `json:"shared_cpus"`
}

// NodeCPU is the node's processor as the agent sees it in /proc/cpuinfo:
// what a sweep's metadata names, rather than the workstation's.
type NodeCPU struct {
	Model string `json:"model"`
	CPUs  int    `json:"cpus"`
}

// Handler serves GET /container?pod=UID&id=CONTAINER_ID, /cpu (the node's
// NodeCPU) and /healthz. sharedCPUs reports the agent's own CPU list.
func Handler(r *Reader, sharedCPUs func() (string, error)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /cpu", func(w http.ResponseWriter, _ *http.Request) {
		model, cpus := procstat.CPUInfo()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(NodeCPU{Model: model, CPUs: cpus})
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /container", func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		s, err := r.Read(q.Get("pod"), q.Get("id"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		writes, err := r.ReadWrites(q.Get("pod"), q.Get("id"), q.Get("file"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		shared, err := sharedCPUs()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(Reading{Sample: s, Writes: writes, SharedCPUs: shared})
	})
	return mux
}

// Client reads containers through an agent at BaseURL (a port-forward).
type Client struct {
	BaseURL string
	HTTP    *http.Client
}

// requestTimeout bounds one reading: the sweep samples several times a
// second and must not hang on a broken forward.
const requestTimeout = 5 * time.Second

// Read returns the agent's reading of one container.
func (c Client) Read(ctx context.Context, podUID, containerID string) (Reading, error) {
	return c.ReadWithFile(ctx, podUID, containerID, "")
}

// ReadWithFile is Read with the size of file inside the container (an
// absolute path as the container sees it) in Writes.FileBytes.
func (c Client) ReadWithFile(ctx context.Context, podUID, containerID, file string) (Reading, error) {
	// An agent that could not read them says so; one that did not send
	// them must not read as zero writes.
	r := Reading{Writes: Writes{WrittenBytes: notMeasured, FileBytes: notMeasured}}
	q := url.Values{"pod": {podUID}, "id": {containerID}}
	if file != "" {
		q.Set("file", file)
	}
	err := c.get(ctx, "/container?"+q.Encode(), &r)
	return r, err
}

// CPU returns the agent's node's processor.
func (c Client) CPU(ctx context.Context) (NodeCPU, error) {
	var n NodeCPU
	err := c.get(ctx, "/cpu", &n)
	return n, err
}

// get decodes the JSON answer to GET path into out.
func (c Client) get(ctx context.Context, path string, out any) error {
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: requestTimeout}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+path, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("cgroup agent: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return fmt.Errorf("cgroup agent: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("cgroup agent: %s: %s", resp.Status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("cgroup agent: %w", err)
	}
	return nil
}
