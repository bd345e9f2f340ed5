package cgroup

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Reading is the agent's answer: the container's sample and the agent's
// own CPUs (the shared pool), from which exclusivity is judged.
type Reading struct {
	Sample
	SharedCPUs string `json:"shared_cpus"`
}

// Handler serves GET /container?pod=UID&id=CONTAINER_ID and /healthz.
// sharedCPUs reports the agent's own CPU list.
func Handler(r *Reader, sharedCPUs func() (string, error)) http.Handler {
	mux := http.NewServeMux()
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
		shared, err := sharedCPUs()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(Reading{Sample: s, SharedCPUs: shared})
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
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: requestTimeout}
	}
	u := c.BaseURL + "/container?" + url.Values{"pod": {podUID}, "id": {containerID}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Reading{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Reading{}, fmt.Errorf("cgroup agent: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return Reading{}, fmt.Errorf("cgroup agent: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return Reading{}, fmt.Errorf("cgroup agent: %s: %s", resp.Status, body)
	}
	var r Reading
	if err := json.Unmarshal(body, &r); err != nil {
		return Reading{}, fmt.Errorf("cgroup agent: %w", err)
	}
	return r, nil
}
