// Package backend is the fast HTTP origin that sweeps and tests put
// behind Envoy. It answers every request with 200 and reports what it
// received (body length and SHA-256) so tests can check what the proxy
// forwarded, and it can echo the request body with a chosen Content-Type so
// response inspection can be exercised.
package backend

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// RecentCapacity is how many requests Recent remembers.
const RecentCapacity = 64

// Stats counts what the server has received since Start.
type Stats struct {
	Requests  int64
	BodyBytes int64
	// Attacks are the requests marked with HeaderAttack.
	Attacks int64
}

// Summary is the last line of a backend's log: what it served, and
// whether a marked attack got past the proxy in front of it.
func (s Stats) Summary() string {
	return fmt.Sprintf("backend: served %d requests, %d of them marked %s\n", s.Requests, s.Attacks, HeaderAttack)
}

// RequestRecord describes one received request.
type RequestRecord struct {
	Method     string
	Path       string
	Host       string
	Header     http.Header
	BodyBytes  int64
	BodySHA256 string
	Proto      string // "HTTP/1.1" or "HTTP/2.0"
}

// Server is a running backend. Its methods are safe for concurrent use.
type Server struct {
	listener net.Listener
	http     *http.Server
	served   chan error // receives http.Serve's result once

	closeOnce sync.Once
	closeErr  error

	cost      Cost
	tls       bool
	requests  atomic.Int64
	bodyBytes atomic.Int64
	attacks   atomic.Int64
	recent    recentRing
}

// Options are what a backend does beyond answering HTTP/1.1 in clear.
type Options struct {
	// Cost is work done per request (a calibration backend).
	Cost Cost
	// HTTP2 also accepts HTTP/2: with prior knowledge in clear (h2c), by
	// ALPN with TLS. Off, the backend is the HTTP/1.1 origin it always was.
	HTTP2 bool
	// CertFile and KeyFile, both or neither, serve TLS (the direct
	// flavor of a TLS sweep, where the backend is the edge).
	CertFile, KeyFile string
}

func (o Options) validate() error {
	if (o.CertFile == "") != (o.KeyFile == "") {
		return errors.New("backend: TLS needs both a certificate and a key file")
	}
	return o.Cost.Validate()
}

// Start listens on addr (e.g. "127.0.0.1:0") and serves in the background.
func Start(addr string) (*Server, error) { return StartWith(addr, Options{}) }

// StartWithCost is Start for a backend that does cost's work per request.
func StartWithCost(addr string, cost Cost) (*Server, error) {
	return StartWith(addr, Options{Cost: cost})
}

// StartWith is Start with options.
func StartWith(addr string, o Options) (*Server, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("backend: listen on %s: %w", addr, err)
	}
	s := &Server{listener: listener, served: make(chan error, 1), cost: o.Cost, tls: o.CertFile != ""}
	s.http = &http.Server{
		Handler:           http.HandlerFunc(s.handle),
		ReadHeaderTimeout: 10 * time.Second,
		Protocols:         new(http.Protocols),
	}
	s.http.Protocols.SetHTTP1(true)
	if o.HTTP2 {
		s.http.Protocols.SetHTTP2(s.tls)
		s.http.Protocols.SetUnencryptedHTTP2(!s.tls)
	}
	go func() {
		if s.tls {
			s.served <- s.http.ServeTLS(listener, o.CertFile, o.KeyFile)
			return
		}
		s.served <- s.http.Serve(listener)
	}()
	return s, nil
}

// Addr is the listening address, host:port.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Port is the listening TCP port.
func (s *Server) Port() int { return s.listener.Addr().(*net.TCPAddr).Port }

// URL is "http://" + Addr(), or "https://" when it serves TLS.
func (s *Server) URL() string {
	if s.tls {
		return "https://" + s.Addr()
	}
	return "http://" + s.Addr()
}

// Close stops the server at once, dropping open connections. Later calls
// return the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.shutdown() })
	return s.closeErr
}

func (s *Server) shutdown() error {
	if err := s.http.Close(); err != nil {
		return fmt.Errorf("backend: close: %w", err)
	}
	if err := <-s.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("backend: serve: %w", err)
	}
	return nil
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	return Stats{Requests: s.requests.Load(), BodyBytes: s.bodyBytes.Load(), Attacks: s.attacks.Load()}
}

// Recent returns the last RecentCapacity requests, oldest first.
func (s *Server) Recent() []RequestRecord { return s.recent.snapshot() }

// recentRing keeps the last RecentCapacity records.
type recentRing struct {
	mu      sync.Mutex
	records [RecentCapacity]RequestRecord
	next    int   // index of the slot to write next
	total   int64 // records ever added
}

func (r *recentRing) add(rec RequestRecord) {
	r.mu.Lock()
	r.records[r.next] = rec
	r.next = (r.next + 1) % RecentCapacity
	r.total++
	r.mu.Unlock()
}

func (r *recentRing) snapshot() []RequestRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := int(min(r.total, RecentCapacity))
	out := make([]RequestRecord, 0, n)
	for i := range n {
		rec := r.records[(r.next-n+i+RecentCapacity)%RecentCapacity]
		// Hand out copies: callers may modify what they get.
		rec.Header = rec.Header.Clone()
		out = append(out, rec)
	}
	return out
}
