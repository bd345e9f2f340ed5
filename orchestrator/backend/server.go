// Package backend is the fast HTTP/1.1 origin that sweeps and tests put
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
}

// RequestRecord describes one received request.
type RequestRecord struct {
	Method     string
	Path       string
	Host       string
	Header     http.Header
	BodyBytes  int64
	BodySHA256 string
}

// Server is a running backend. Its methods are safe for concurrent use.
type Server struct {
	listener net.Listener
	http     *http.Server
	served   chan error // receives http.Serve's result once

	closeOnce sync.Once
	closeErr  error

	cost      Cost
	requests  atomic.Int64
	bodyBytes atomic.Int64
	recent    recentRing
}

// Start listens on addr (e.g. "127.0.0.1:0") and serves in the background.
func Start(addr string) (*Server, error) { return StartWithCost(addr, Cost{}) }

// StartWithCost is Start for a backend that does cost's work per request.
func StartWithCost(addr string, cost Cost) (*Server, error) {
	if err := cost.Validate(); err != nil {
		return nil, err
	}
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("backend: listen on %s: %w", addr, err)
	}
	s := &Server{listener: listener, served: make(chan error, 1), cost: cost}
	s.http = &http.Server{
		Handler:           http.HandlerFunc(s.handle),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { s.served <- s.http.Serve(listener) }()
	return s, nil
}

// Addr is the listening address, host:port.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Port is the listening TCP port.
func (s *Server) Port() int { return s.listener.Addr().(*net.TCPAddr).Port }

// URL is "http://" + Addr().
func (s *Server) URL() string { return "http://" + s.Addr() }

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
	return Stats{Requests: s.requests.Load(), BodyBytes: s.bodyBytes.Load()}
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
