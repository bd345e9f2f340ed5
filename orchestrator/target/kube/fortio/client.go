// Package fortio drives a Fortio server's REST API, the load generator of
// the Kubernetes targets, which runs in a pod on a node of its own: start a
// run asynchronously (POST /fortio/rest/run with async=on), poll
// /fortio/rest/status?runid=N until it has ended, then fetch the result
// from /fortio/data/<id>.json. The run is configured exactly as package
// loadgen configures the in-process Fortio of the local target, so the two
// targets' steps measure the same thing.
package fortio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/loadgen"
)

// These match package loadgen's in-process runs.
const (
	resolution  = "0.0001" // seconds: sub-millisecond latency needs 0.1 ms buckets
	percentiles = "50,90,99,99.9"
)

// Client talks to one Fortio server; BaseURL is its control address (a
// port-forward), never the data plane.
type Client struct {
	BaseURL   string
	HTTP      *http.Client
	PollEvery time.Duration // default 500 ms
}

// RunRequest is the JSON body of /fortio/rest/run: Fortio reads every
// option as a string.
type RunRequest struct {
	URL       string `json:"url"`
	Async     string `json:"async"`
	Save      string `json:"save"`
	QPS       string `json:"qps"`
	Duration  string `json:"t"`
	C         string `json:"c"`
	R         string `json:"r"`
	P         string `json:"p"`
	Uniform   string `json:"uniform"`
	NoCatchUp string `json:"nocatchup"`
	Jitter    string `json:"jitter"`
	// SequentialWarmup sends each connection's first request one
	// connection at a time (loadgen.fortioOptions says why).
	SequentialWarmup string   `json:"sequential-warmup"`
	Timeout          string   `json:"timeout"`
	Method           string   `json:"X,omitempty"`
	Payload          string   `json:"payload,omitempty"`
	Headers          []string `json:"headers"`
	Labels           string   `json:"labels"`
	StdClient        string   `json:"stdclient"`
	Connection       string   `json:"connection-reuse,omitempty"`
}

type asyncReply struct {
	Message  string
	Failed   bool
	RunID    int64
	ResultID string
}

type statusReply struct {
	Statuses map[string]struct {
		RunID int64
		State int
	}
}

// Request builds the run request of spec; exported for tests that stand
// in for the server.
func Request(spec loadgen.Spec) (RunRequest, error) {
	if err := validate(spec); err != nil {
		return RunRequest{}, err
	}
	host := spec.Host
	if host == "" {
		host = loadgen.DefaultHost
	}
	method := spec.Method
	if method == "" {
		method = http.MethodGet
		if len(spec.Body) > 0 {
			method = http.MethodPost
		}
	}
	timeout := spec.RequestTimeout
	if timeout == 0 {
		timeout = loadgen.DefaultRequestTimeout
	}
	headers := map[string]string{"User-Agent": loadgen.DefaultUserAgent, "Accept": loadgen.DefaultAccept}
	for k, v := range spec.Headers {
		headers[http.CanonicalHeaderKey(k)] = v
	}
	list := []string{"Host: " + host}
	if spec.ContentType != "" {
		list = append(list, "Content-Type: "+spec.ContentType)
	}
	for k, v := range headers {
		list = append(list, k+": "+v)
	}
	return RunRequest{
		URL: spec.URL, Async: "on", Save: "on",
		QPS:      strconv.FormatFloat(spec.QPS, 'f', -1, 64),
		Duration: spec.Duration.String(),
		C:        strconv.Itoa(spec.Connections),
		R:        resolution, P: percentiles,
		Uniform: "on", NoCatchUp: "on", Jitter: "off", SequentialWarmup: "on",
		Timeout: timeout.String(),
		Method:  method,
		Payload: string(spec.Body),
		Headers: list,
		Labels:  "wafsweep",
		// Fortio's fast HTTP/1.1 client, as the in-process runs use.
		StdClient: "off",
	}, nil
}

func validate(spec loadgen.Spec) error {
	var errs []error
	if u, err := url.Parse(spec.URL); err != nil || u.Scheme != "http" || u.Host == "" {
		errs = append(errs, fmt.Errorf("URL %q must be http://host:port/...", spec.URL))
	}
	if spec.QPS <= 0 {
		errs = append(errs, fmt.Errorf("QPS %v must be positive", spec.QPS))
	}
	if spec.Connections < 1 {
		errs = append(errs, fmt.Errorf("Connections %d must be at least 1", spec.Connections))
	}
	if spec.Duration <= 0 {
		errs = append(errs, fmt.Errorf("Duration %v must be positive", spec.Duration))
	}
	if bytes.ContainsRune(spec.Body, 0) {
		// The REST API takes the payload as a JSON string.
		errs = append(errs, errors.New("the body contains NUL bytes, which the Fortio REST API cannot carry"))
	}
	return errors.Join(errs...)
}

// Run runs one step on the server and returns its result, without the
// load generator's CPU (the caller reads that from the Fortio container's
// cgroup). Cancelling ctx stops the run on the server.
func (c Client) Run(ctx context.Context, spec loadgen.Spec) (loadgen.Result, error) {
	req, err := Request(spec)
	if err != nil {
		return loadgen.Result{}, fmt.Errorf("fortio: invalid spec: %w", err)
	}
	body, _ := json.Marshal(req)
	var started asyncReply
	if err := c.do(ctx, http.MethodPost, "/fortio/rest/run", body, &started); err != nil {
		return loadgen.Result{}, fmt.Errorf("fortio: starting the run: %w", err)
	}
	if started.Failed || started.RunID == 0 || started.ResultID == "" {
		return loadgen.Result{}, fmt.Errorf("fortio: the server did not start the run: %+v", started)
	}
	if err := c.waitEnded(ctx, started.RunID); err != nil {
		c.stop(started.RunID)
		return loadgen.Result{}, err
	}
	raw, err := c.get(ctx, "/fortio/data/"+url.PathEscape(started.ResultID)+".json")
	if err != nil {
		return loadgen.Result{}, fmt.Errorf("fortio: fetching result %s: %w", started.ResultID, err)
	}
	return ToResult(spec, raw)
}

// waitEnded polls the run's status until the server no longer lists it
// (Fortio removes a run from its table when it ends).
func (c Client) waitEnded(ctx context.Context, runID int64) error {
	every := c.PollEvery
	if every == 0 {
		every = 500 * time.Millisecond
	}
	for {
		var st statusReply
		if err := c.do(ctx, http.MethodGet, "/fortio/rest/status?runid="+strconv.FormatInt(runID, 10), nil, &st); err != nil {
			return fmt.Errorf("fortio: polling run %d: %w", runID, err)
		}
		if len(st.Statuses) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fortio: run %d interrupted: %w", runID, ctx.Err())
		case <-time.After(every):
		}
	}
}

// stop asks the server to end a run the caller gave up on, so it does not
// keep loading the proxy during the next step.
func (c Client) stop(runID int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.do(ctx, http.MethodGet, "/fortio/rest/stop?wait=on&runid="+strconv.FormatInt(runID, 10), nil, nil)
}

func (c Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 30 * time.Second}
}

func (c Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(data)))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decoding %q: %w", method, path, truncate(data), err)
	}
	return nil
}

func (c Client) get(ctx context.Context, path string) ([]byte, error) {
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodGet, path, nil, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
