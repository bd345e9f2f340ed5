package crs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// recorder is a backend that keeps everything Envoy sends it: per
// connection, the bytes exactly as read from the socket, and the requests
// Go's server parsed from them. It answers every request 200 with
// "Connection: close", so Envoy opens a connection per request and a
// connection's bytes are one request's, with whatever else Envoy wrote
// behind it (which a smuggling test must see). Bytes no handler saw, such
// as a request Go's server refused or a stream Envoy reset half-way, are
// recorded too.
type recorder struct {
	port int

	mu    sync.Mutex
	conns []*recordedConn // in accept order
}

// recordedConn is one connection from Envoy.
type recordedConn struct {
	mu       sync.Mutex
	raw      bytes.Buffer
	done     bool // the request was handled, or the connection ended
	requests []recordedRequest
}

// recordedRequest is a request as Go's server parsed it.
type recordedRequest struct {
	method, target, proto, host string
	header                      http.Header
	transferEncoding            []string
	body                        []byte
}

type connKey struct{}

// startRecorder serves on 127.0.0.1 until the test ends.
func startRecorder(t testing.TB) *recorder {
	t.Helper()
	l, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		t.Fatalf("recorder: listen: %v", err)
	}
	rec := &recorder{port: l.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{
		Handler:           http.HandlerFunc(rec.serve),
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c.(*teeConn).rec)
		},
	}
	go func() { _ = srv.Serve(&teeListener{Listener: l, rec: rec}) }()
	t.Cleanup(func() { _ = srv.Close() })
	return rec
}

func (rec *recorder) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c := r.Context().Value(connKey{}).(*recordedConn)
	c.mu.Lock()
	c.requests = append(c.requests, recordedRequest{
		method: r.Method, target: r.RequestURI, proto: r.Proto, host: r.Host,
		header: r.Header.Clone(), transferEncoding: r.TransferEncoding, body: body,
	})
	c.done = true
	c.mu.Unlock()
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, "recorded\n")
}

// count is how many connections Envoy has opened so far.
func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.conns)
}

// waitFor waits until a connection from index from on carries a request
// with header name set to value, and returns its index.
func (rec *recorder) waitFor(from int, name, value string, timeout time.Duration) (int, error) {
	hasIt := func(r recordedRequest) bool { return r.header.Get(name) == value }
	deadline := time.Now().Add(timeout)
	for {
		rec.mu.Lock()
		conns := slices.Clone(rec.conns[min(from, len(rec.conns)):])
		rec.mu.Unlock()
		for i, c := range conns {
			c.mu.Lock()
			found := slices.ContainsFunc(c.requests, hasIt)
			c.mu.Unlock()
			if found {
				return from + i, nil
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the backend got no request with %s: %s in %s", name, value, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// arrival is what one connection brought, once it is final.
type arrival struct {
	raw      []byte
	requests []recordedRequest
}

// settled returns what connections [from, to) brought, once each is done,
// so that their bytes are final.
func (rec *recorder) settled(from, to int, timeout time.Duration) ([]arrival, error) {
	rec.mu.Lock()
	conns := slices.Clone(rec.conns[from:to])
	rec.mu.Unlock()
	out := make([]arrival, 0, len(conns))
	deadline := time.Now().Add(timeout)
	for _, c := range conns {
		for {
			c.mu.Lock()
			done := c.done
			if done {
				out = append(out, arrival{raw: bytes.Clone(c.raw.Bytes()), requests: slices.Clone(c.requests)})
			}
			c.mu.Unlock()
			if done {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("a backend connection neither carried a request nor ended in %s", timeout)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return out, nil
}

// teeListener registers each accepted connection with the recorder.
type teeListener struct {
	net.Listener
	rec *recorder
}

func (l *teeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	rc := &recordedConn{}
	l.rec.mu.Lock()
	l.rec.conns = append(l.rec.conns, rc)
	l.rec.mu.Unlock()
	return &teeConn{Conn: c, rec: rc}, nil
}

// teeConn copies every byte read into its record.
type teeConn struct {
	net.Conn
	rec *recordedConn
}

func (c *teeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.rec.mu.Lock()
	c.rec.raw.Write(p[:n])
	if err != nil {
		c.rec.done = true
	}
	c.rec.mu.Unlock()
	return n, err
}

func (c *teeConn) Close() error {
	c.rec.mu.Lock()
	c.rec.done = true
	c.rec.mu.Unlock()
	return c.Conn.Close()
}
