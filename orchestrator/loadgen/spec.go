// Package loadgen drives constant-throughput HTTP load (HTTP/1.1 or
// HTTP/2, in clear or over TLS) with Fortio as a library and reports what a sweep step needs: what completed inside the
// measured window against what was scheduled there (the capacity signal),
// status codes, socket use, raw latency and latency corrected for
// coordinated omission (see Window), and the load generator's own CPU.
package loadgen

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults applied by Run and Probe when the Spec leaves a field empty.
const (
	// DefaultHost is sent as Host: a numeric Host trips CRS rule 920350,
	// which would make benign traffic look like an attack.
	DefaultHost = "wafsweep.test"
	// DefaultUserAgent and DefaultAccept are sent unless Headers set them;
	// CRS flags requests missing either (rules 920320, 920300).
	DefaultUserAgent = "wafsweep-loadgen/1"
	DefaultAccept    = "*/*"
	// DefaultRequestTimeout bounds one request, as Fortio's own default.
	DefaultRequestTimeout = 3 * time.Second
)

// Spec describes one load step.
type Spec struct {
	URL         string // http://127.0.0.1:PORT/path, or https:// with CAFile
	Host        string // Host header; default DefaultHost; never an IP
	Method      string // default GET, or POST when Body is set
	ContentType string
	Body        []byte
	Headers     map[string]string // extra headers (not Host, Content-Type or Content-Length)
	QPS         float64           // total target rate across all connections
	Connections int               // keep-alive connections, one Fortio thread each
	// Warmup is load at the same rate, in the same run, before the
	// measured window: the window starts with the queues it would have.
	Warmup time.Duration
	// Duration is the measured window.
	Duration time.Duration
	// OnEdge, when set, is called at the window's start and end, from
	// another goroutine while the load runs; it should return quickly.
	// at is when the load generator marked the edge, on its own clock:
	// what the callee samples then is some time later.
	OnEdge func(e Edge, at time.Time)
	// NoCatchUp makes a connection that fell behind skip the slots it
	// overran instead of sending them late. Measurements keep catch-up
	// (see Window); the hardening tests' steady mixes use this to keep a
	// late proxy from getting bursts.
	NoCatchUp bool
	// RequestTimeout bounds each request; default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// HTTP2 speaks HTTP/2: with prior knowledge (h2c) to an http:// URL,
	// negotiated by ALPN (and required) to an https:// one. Fortio then
	// uses its standard client (net/http) instead of its own HTTP/1.1
	// client, which costs the load generator more CPU per request.
	HTTP2 bool
	// CAFile is the PEM CA an https:// URL's certificate must chain to:
	// the load generator always verifies the proxy it measures.
	CAFile string
	// Resolve, an IP address, is where connections go in place of the
	// address the URL's host names, as a client that looked the name up
	// would connect (Fortio's -resolve). The URL's host stays the TLS
	// server name the certificate is verified for: a proxy reached by pod
	// IP is verified for the name it serves, not for an address.
	Resolve string
	// Apart keeps a run of RunAll out of the union it returns: measured on
	// its own over the shared window, as attacks sent beside benign load
	// are, so that its calls count neither in the union's rates nor in its
	// latency. Run ignores it.
	Apart bool
}

// Edge names the two edges of the measured window.
type Edge int

const (
	WindowStart Edge = iota
	WindowEnd
)

// ScheduledCalls is the number of calls Fortio makes for this rate,
// duration and connection count: each connection gets floor(QPS*T/c).
func ScheduledCalls(qps float64, d time.Duration, connections int) int64 {
	if connections < 1 {
		return 0
	}
	total := int64(math.Floor(qps * d.Seconds()))
	return total / int64(connections) * int64(connections)
}

// normalized returns the spec with defaults filled in, or every problem
// found in it.
func (s Spec) normalized() (Spec, error) {
	if s.Host == "" {
		s.Host = DefaultHost
	}
	if s.Method == "" {
		s.Method = http.MethodGet
		if len(s.Body) > 0 {
			s.Method = http.MethodPost
		}
	}
	if s.RequestTimeout == 0 {
		s.RequestTimeout = DefaultRequestTimeout
	}
	headers := make(map[string]string, len(s.Headers)+2)
	headers["User-Agent"], headers["Accept"] = DefaultUserAgent, DefaultAccept
	for k, v := range s.Headers {
		headers[http.CanonicalHeaderKey(k)] = v
	}
	s.Headers = headers
	return s, s.validate()
}

func (s Spec) validate() error {
	errs := []error{validateURL(s.URL, s.CAFile), validateHost(s.Host), validateHeaders(s.Headers), validateResolve(s.Resolve)}
	if s.QPS <= 0 || math.IsInf(s.QPS, 0) || math.IsNaN(s.QPS) {
		errs = append(errs, fmt.Errorf("QPS %v must be a positive number", s.QPS))
	}
	if s.Connections < 1 {
		errs = append(errs, fmt.Errorf("Connections %d must be at least 1", s.Connections))
	}
	if s.Duration <= 0 {
		errs = append(errs, fmt.Errorf("Duration %v must be positive", s.Duration))
	}
	if s.Warmup < 0 {
		errs = append(errs, fmt.Errorf("Warmup %v must not be negative", s.Warmup))
	}
	if s.RequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("RequestTimeout %v must not be negative", s.RequestTimeout))
	}
	// A connection with fewer than two calls in the window says little of
	// the schedule it was to keep (and Fortio, given a fixed duration,
	// drops such connections). An Apart run is not judged on its rate:
	// attacks sent at a small share of a low rate may have one call or
	// none in the window, and every call of the run still counts.
	if !s.Apart && s.Connections >= 1 && s.QPS > 0 && s.Duration > 0 && s.QPS*s.Duration.Seconds() < float64(2*s.Connections) {
		errs = append(errs, fmt.Errorf("QPS*Duration = %.0f calls is less than 2 per connection (%d connections)",
			s.QPS*s.Duration.Seconds(), s.Connections))
	}
	return errors.Join(errs...)
}

func validateURL(raw, caFile string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("URL %q: %w", raw, err)
	}
	switch {
	case u.Host == "" || u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("URL %q must be http://host:port/... or https://host:port/...", raw)
	case u.Scheme == "https" && caFile == "":
		return fmt.Errorf("URL %q is https: name the CA its certificate chains to (CAFile); the load generator does not skip verification", raw)
	case u.Scheme == "http" && caFile != "":
		return fmt.Errorf("URL %q is http but a CA file is set: use https:// to measure TLS", raw)
	}
	return nil
}

func validateResolve(addr string) error {
	if addr != "" && net.ParseIP(addr) == nil {
		return fmt.Errorf("Resolve %q is not an IP address", addr)
	}
	return nil
}

func validateHost(host string) error {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	if net.ParseIP(strings.Trim(name, "[]")) != nil {
		return fmt.Errorf("Host %q is numeric; CRS rule 920350 flags that, use a name such as %s", host, DefaultHost)
	}
	return nil
}

func validateHeaders(headers map[string]string) error {
	for k := range headers {
		switch http.CanonicalHeaderKey(k) {
		case "Host", "Content-Type", "Content-Length":
			return fmt.Errorf("header %q must be set through Spec.Host, Spec.ContentType or Spec.Body", k)
		}
	}
	return nil
}
