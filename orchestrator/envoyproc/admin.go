package envoyproc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"
)

// adminTimeout bounds one admin request so a wedged Envoy cannot hang a
// sweep.
const adminTimeout = 5 * time.Second

// Admin talks to one Envoy's admin interface: this machine's Envoy on
// 127.0.0.1, or a pod's through its port-forward.
type Admin struct {
	base   string
	client *http.Client
}

// NewAdmin is a client of the admin interface at base ("http://host:port").
func NewAdmin(base string) *Admin {
	return &Admin{
		base: base,
		client: &http.Client{
			Timeout: adminTimeout,
			// No proxy: the admin port is local (or a local port-forward)
			// whatever the environment says.
			Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2},
		},
	}
}

func newAdminClient(port int) *Admin { return NewAdmin(fmt.Sprintf("http://127.0.0.1:%d", port)) }

// Close drops the client's idle connections.
func (a *Admin) Close() { a.client.CloseIdleConnections() }

// get returns the body of a 200 response to GET path.
func (a *Admin) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("envoyproc: admin %s: %w", path, err)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("envoyproc: admin %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("envoyproc: admin %s: read body: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("envoyproc: admin %s: status %d: %.200s", path, resp.StatusCode, body)
	}
	return body, nil
}

func (a *Admin) ready(ctx context.Context) bool {
	_, err := a.get(ctx, "/ready")
	return err == nil
}

// AdminGet returns the body of a 200 answer to an admin GET, e.g.
// "/clusters" or "/config_dump".
func (p *Process) AdminGet(ctx context.Context, path string) ([]byte, error) {
	return p.admin.get(ctx, path)
}

// Counter reads one counter or gauge by its full name, e.g.
// "http.ingress_http.downstream_rq_completed". It asks the admin interface
// for that stat alone, so sampling it costs Envoy's main thread little.
func (p *Process) Counter(ctx context.Context, name string) (uint64, error) {
	return p.admin.Counter(ctx, name)
}

// Counter reads one counter or gauge by its full name (see
// Process.Counter).
func (a *Admin) Counter(ctx context.Context, name string) (uint64, error) {
	body, err := a.get(ctx, "/stats?format=json&filter="+url.QueryEscape("^"+regexp.QuoteMeta(name)+"$"))
	if err != nil {
		return 0, err
	}
	stats, err := parseStatsJSON(body)
	if err != nil {
		return 0, err
	}
	v, ok := stats[name]
	if !ok {
		return 0, fmt.Errorf("envoyproc: admin stats have no %s", name)
	}
	return v, nil
}

// DownstreamCompleted reads the cumulative downstream_rq_completed of the
// HTTP connection manager whose stat prefix is statPrefix, bounded by the
// admin timeout: the proxy's own count of the requests it served.
func (a *Admin) DownstreamCompleted(statPrefix string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	n, err := a.Counter(ctx, "http."+statPrefix+".downstream_rq_completed")
	return int64(n), err
}

// DownstreamCompleted is Admin.DownstreamCompleted of this Envoy.
func (p *Process) DownstreamCompleted(statPrefix string) (int64, error) {
	return p.admin.DownstreamCompleted(statPrefix)
}

// Stats returns every counter and gauge by name (histograms and text
// readouts are left out).
func (p *Process) Stats(ctx context.Context) (map[string]uint64, error) {
	body, err := p.admin.get(ctx, "/stats?format=json")
	if err != nil {
		return nil, err
	}
	return parseStatsJSON(body)
}

func parseStatsJSON(body []byte) (map[string]uint64, error) {
	var doc struct {
		Stats []struct {
			Name  string          `json:"name"`
			Value json.RawMessage `json:"value"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("envoyproc: decode /stats JSON: %w", err)
	}
	stats := make(map[string]uint64, len(doc.Stats))
	for _, s := range doc.Stats {
		// The histogram entry has no name; text readouts have string values.
		if s.Name == "" || len(s.Value) == 0 || s.Value[0] == '"' {
			continue
		}
		v, err := strconv.ParseUint(string(s.Value), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("envoyproc: stat %s: value %s: %w", s.Name, s.Value, err)
		}
		stats[s.Name] = v
	}
	return stats, nil
}

// PrometheusStats returns the /stats/prometheus exposition text.
func (p *Process) PrometheusStats(ctx context.Context) (string, error) {
	body, err := p.admin.get(ctx, "/stats/prometheus")
	return string(body), err
}

// ServerInfo is the part of admin /server_info a sweep needs.
type ServerInfo struct {
	Version    string
	State      string // LIVE once serving
	Uptime     time.Duration
	ConfigPath string // the -c this Envoy was started with
}

// ServerInfo reads admin /server_info.
func (p *Process) ServerInfo(ctx context.Context) (ServerInfo, error) {
	body, err := p.admin.get(ctx, "/server_info")
	if err != nil {
		return ServerInfo{}, err
	}
	return parseServerInfo(body)
}

func parseServerInfo(body []byte) (ServerInfo, error) {
	var doc struct {
		Version string `json:"version"`
		State   string `json:"state"`
		Uptime  string `json:"uptime_current_epoch"`
		Options struct {
			ConfigPath string `json:"config_path"`
		} `json:"command_line_options"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return ServerInfo{}, fmt.Errorf("envoyproc: decode /server_info: %w", err)
	}
	uptime, err := time.ParseDuration(doc.Uptime)
	if err != nil {
		return ServerInfo{}, fmt.Errorf("envoyproc: /server_info uptime %q: %w", doc.Uptime, err)
	}
	return ServerInfo{Version: doc.Version, State: doc.State, Uptime: uptime, ConfigPath: doc.Options.ConfigPath}, nil
}

// Restarted reports whether the Envoy serving now is not the one seen in
// before (taken e.g. at the start of a sweep step): the process exited, or
// the admin port answers with a smaller uptime, i.e. a different process.
// A sweep step during which this turns true is invalid, not failed.
func (p *Process) Restarted(ctx context.Context, before ServerInfo) (bool, error) {
	if p.Exited() {
		return true, nil
	}
	now, err := p.ServerInfo(ctx)
	if err != nil {
		return false, err
	}
	return now.Uptime < before.Uptime, nil
}
