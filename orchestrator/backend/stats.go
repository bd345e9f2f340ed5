package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// StatsPath is where a stats listener (--stats-listen) answers with the
// backend's Stats as JSON: how a backend that outlives its configurations
// (the Kubernetes targets' pod) says what reached it during each one.
const StatsPath = "/stats"

// Plus is s and o counted together.
func (s Stats) Plus(o Stats) Stats {
	return Stats{Requests: s.Requests + o.Requests, BodyBytes: s.BodyBytes + o.BodyBytes, Attacks: s.Attacks + o.Attacks}
}

// Since is what was counted between an earlier reading and s.
func (s Stats) Since(earlier Stats) Stats {
	return Stats{Requests: s.Requests - earlier.Requests, BodyBytes: s.BodyBytes - earlier.BodyBytes, Attacks: s.Attacks - earlier.Attacks}
}

// StatsHandler answers StatsPath with stats(), as --stats-listen does.
func StatsHandler(stats func() Stats) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+StatsPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(stats())
	})
	return mux
}

// ReadStats asks the stats listener at baseURL (http://host:port) for the
// backend's counts so far.
func ReadStats(ctx context.Context, baseURL string) (Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+StatsPath, nil)
	if err != nil {
		return Stats{}, fmt.Errorf("backend stats: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Stats{}, fmt.Errorf("backend stats: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Stats{}, fmt.Errorf("backend stats at %s: %s", baseURL, resp.Status)
	}
	var s Stats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return Stats{}, fmt.Errorf("backend stats at %s: %w", baseURL, err)
	}
	return s, nil
}
