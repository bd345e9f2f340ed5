package loadgen

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// maxProbeBody bounds what Probe reads: it is a pre-check, not a download.
const maxProbeBody = 1 << 20

// Probe sends the spec's request once with net/http (same method, body,
// Host and headers) and returns the answer; used to pre-check a target,
// e.g. that the WAF blocks an attack or passes benign traffic. Rate,
// connections and duration are ignored.
func Probe(ctx context.Context, spec Spec) (status int, body []byte, headers http.Header, err error) {
	spec.QPS, spec.Connections, spec.Duration = 1, 1, 2*time.Second // irrelevant here
	spec, err = spec.normalized()
	if err != nil {
		return 0, nil, nil, fmt.Errorf("loadgen: invalid spec: %w", err)
	}
	req, err := newRequest(ctx, spec)
	if err != nil {
		return 0, nil, nil, err
	}
	transport, err := probeTransport(spec)
	if err != nil {
		return 0, nil, nil, err
	}
	client := &http.Client{
		Timeout:   spec.RequestTimeout,
		Transport: transport,
		// A redirect is an answer worth seeing, not following.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	wantMajor := 1
	if spec.HTTP2 {
		wantMajor = 2
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("loadgen: probe %s over HTTP/%d: %w", spec.URL, wantMajor, err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != wantMajor {
		return 0, nil, nil, fmt.Errorf("loadgen: probe %s: the answer came over %s, want HTTP/%d", spec.URL, resp.Proto, wantMajor)
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxProbeBody))
	if err != nil {
		return resp.StatusCode, nil, resp.Header, fmt.Errorf("loadgen: probe %s: read body: %w", spec.URL, err)
	}
	return resp.StatusCode, body, resp.Header, nil
}

// probeTransport speaks exactly the spec's protocol, with no fallback: a
// target that cannot speak it fails the probe instead of being measured
// over another protocol. One-shot: no proxy, and no idle connection left
// behind in the proxy's connection stats.
func probeTransport(spec Spec) (*http.Transport, error) {
	t := &http.Transport{Proxy: nil, DisableKeepAlives: true, Protocols: new(http.Protocols)}
	overTLS := strings.HasPrefix(spec.URL, "https:")
	switch {
	case !spec.HTTP2:
		t.Protocols.SetHTTP1(true)
	case overTLS:
		t.Protocols.SetHTTP2(true)
	default:
		t.Protocols.SetUnencryptedHTTP2(true)
	}
	if overTLS {
		cfg, err := clientTLS(spec.CAFile)
		if err != nil {
			return nil, err
		}
		t.TLSClientConfig = cfg
	}
	if spec.Resolve != "" {
		dialer := &net.Dialer{Timeout: spec.RequestTimeout}
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, connectAddress(&url.URL{Host: addr}, spec.Resolve))
		}
	}
	return t, nil
}

// clientTLS trusts caFile alone.
func clientTLS(caFile string) (*tls.Config, error) {
	pemData, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("loadgen: CA file: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemData) {
		return nil, fmt.Errorf("loadgen: CA file %s holds no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, nil
}

func newRequest(ctx context.Context, spec Spec) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, spec.Method, spec.URL, bytes.NewReader(spec.Body))
	if err != nil {
		return nil, fmt.Errorf("loadgen: build request: %w", err)
	}
	req.Host = spec.Host
	for k, v := range spec.Headers {
		req.Header.Set(k, v)
	}
	if spec.ContentType != "" {
		req.Header.Set("Content-Type", spec.ContentType)
	}
	return req, nil
}

// dialTimeout bounds the reachability check before a run.
const dialTimeout = 2 * time.Second

// checkReachable makes sure something accepts TCP connections where the
// spec connects, so a run aimed at a dead port fails at once instead of
// spending its whole duration on socket errors. A dial, not a request, so the target's request
// counters only see the run.
func checkReachable(ctx context.Context, spec Spec) error {
	u, err := url.Parse(spec.URL)
	if err != nil {
		return fmt.Errorf("loadgen: URL %q: %w", spec.URL, err)
	}
	addr := connectAddress(u, spec.Resolve)
	dialer := net.Dialer{Timeout: dialTimeout}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("loadgen: target %s unreachable, not starting the load: %w", addr, err)
	}
	return conn.Close()
}

// connectAddress is where a connection to u goes: its host and port, or
// resolve in place of the host.
func connectAddress(u *url.URL, resolve string) string {
	host, port := u.Hostname(), u.Port()
	if resolve != "" {
		host = resolve
	}
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(host, port)
}
