package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wafsweep/wafsweep/orchestrator/backend"
	"github.com/wafsweep/wafsweep/orchestrator/tlscert"
)

// Each transport reaches a real server speaking it: the probe and the load
// arrive in the protocol asked for (as the server saw them), on one
// connection per Fortio connection, and the certificate is verified.
func TestRunAndProbeSpeakTheTransport(t *testing.T) {
	certs, err := tlscert.Generate(t.TempDir(), tlscert.Loopback(DefaultHost))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		http2     bool
		tls       bool
		wantProto string
	}{
		{"h1", false, false, "HTTP/1.1"},
		{"h2c", true, false, "HTTP/2.0"},
		{"h1+tls", false, true, "HTTP/1.1"},
		{"h2+tls", true, true, "HTTP/2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{HTTP2: tc.http2, QPS: 100, Connections: 2, Duration: time.Second}
			be := startBackendOver(t, backend.Options{HTTP2: true}, certs, tc.tls)
			spec.URL = be.URL() + "/t"
			if tc.tls {
				spec.CAFile = certs.CA
			}
			status, _, _, err := Probe(context.Background(), spec)
			if err != nil || status != 200 {
				t.Fatalf("probe: %d %v", status, err)
			}
			if got := be.Recent()[0].Proto; got != tc.wantProto {
				t.Errorf("the probe arrived over %s, want %s", got, tc.wantProto)
			}
			res, err := Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if res.CompletionRatio() < 0.99 || res.Non2xx != 0 || res.SocketErrors != 0 {
				t.Errorf("completed %d of %d, non-2xx %d, socket errors %d", res.Completed, res.Scheduled, res.Non2xx, res.SocketErrors)
			}
			var raw struct{ CACert string }
			if err := json.Unmarshal(res.RawJSON, &raw); err != nil || (raw.CACert == RunCA) != tc.tls {
				t.Errorf("the archived result names the CA as %q (%v): want %q over TLS, nothing otherwise", raw.CACert, err, RunCA)
			}
			if res.SocketsOpened != int64(spec.Connections) {
				t.Errorf("opened %d connections, want %d", res.SocketsOpened, spec.Connections)
			}
			for _, rec := range be.Recent() {
				if rec.Proto != tc.wantProto || rec.Host != DefaultHost {
					t.Fatalf("a load request arrived over %s for %q, want %s for %s", rec.Proto, rec.Host, tc.wantProto, DefaultHost)
				}
			}
		})
	}
}

// A target that does not speak the protocol asked for fails the probe:
// nothing falls back to HTTP/1.1 and measures it as HTTP/2.
func TestProbeRefusesAnotherProtocol(t *testing.T) {
	certs, err := tlscert.Generate(t.TempDir(), tlscert.Loopback(DefaultHost))
	if err != nil {
		t.Fatal(err)
	}
	for _, tls := range []bool{false, true} {
		be := startBackendOver(t, backend.Options{}, certs, tls) // HTTP/1.1 only
		spec := Spec{URL: be.URL() + "/t", HTTP2: true}
		if tls {
			spec.CAFile = certs.CA
		}
		if status, _, _, err := Probe(context.Background(), spec); err == nil {
			t.Errorf("tls=%v: an HTTP/1.1-only backend passed an HTTP/2 probe with %d", tls, status)
		}
	}
}

// TLS is verified against the run's CA: another CA's certificate fails,
// and an https URL without a CA is refused before any traffic.
func TestTLSIsVerified(t *testing.T) {
	served, err := tlscert.Generate(t.TempDir(), tlscert.Loopback(DefaultHost))
	if err != nil {
		t.Fatal(err)
	}
	other, err := tlscert.Generate(t.TempDir(), tlscert.Loopback(DefaultHost))
	if err != nil {
		t.Fatal(err)
	}
	be := startBackendOver(t, backend.Options{}, served, true)
	if _, _, _, err := Probe(context.Background(), Spec{URL: be.URL(), CAFile: other.CA}); err == nil {
		t.Error("a certificate from another CA was accepted")
	}
	_, err = Run(context.Background(), Spec{URL: be.URL(), QPS: 10, Connections: 1, Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "CAFile") {
		t.Errorf("https without a CA: %v, want a refusal naming CAFile", err)
	}
	if be.Stats().Requests != 0 {
		t.Errorf("the backend saw %d requests, want none", be.Stats().Requests)
	}
}

// startBackendOver starts a backend with o, serving TLS with certs when
// tls is set, until the test ends.
func startBackendOver(t *testing.T, o backend.Options, certs tlscert.Files, tls bool) *backend.Server {
	t.Helper()
	if tls {
		o.CertFile, o.KeyFile = certs.Cert, certs.Key
	}
	be, err := backend.StartWith("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = be.Close() })
	return be
}

// A proxy reached by an address its certificate does not name (a pod IP)
// is verified for the name it serves: Resolve sends the connections to the
// address and keeps the URL's name as the TLS server name, for the probe
// and the load, over both protocols. Without it, the address fails
// verification.
func TestResolveVerifiesTheNameNotTheAddress(t *testing.T) {
	nameOnly, err := tlscert.Generate(t.TempDir(), tlscert.Spec{DNSNames: []string{DefaultHost}})
	if err != nil {
		t.Fatal(err)
	}
	for _, http2 := range []bool{false, true} {
		be := startBackendOver(t, backend.Options{HTTP2: true}, nameOnly, true)
		byName := fmt.Sprintf("https://%s:%d/t", DefaultHost, be.Port())
		spec := Spec{URL: byName, Resolve: "127.0.0.1", CAFile: nameOnly.CA, HTTP2: http2, QPS: 50, Connections: 1, Duration: time.Second}
		if status, _, _, err := Probe(context.Background(), spec); err != nil || status != 200 {
			t.Fatalf("h2=%v: probe by name: %d %v", http2, status, err)
		}
		res, err := Run(context.Background(), spec)
		if err != nil || res.CompletionRatio() < 0.99 || res.SocketErrors != 0 {
			t.Fatalf("h2=%v: load by name: %v, completed %d of %d, socket errors %d", http2, err, res.Completed, res.Scheduled, res.SocketErrors)
		}
		byAddress := spec
		byAddress.URL, byAddress.Resolve = be.URL()+"/t", ""
		if status, _, _, err := Probe(context.Background(), byAddress); err == nil {
			t.Errorf("h2=%v: a certificate for %s alone verified for %s (%d)", http2, DefaultHost, be.Addr(), status)
		}
	}
	if _, err := Run(context.Background(), Spec{URL: "http://127.0.0.1:1/", Resolve: DefaultHost, QPS: 10, Connections: 1, Duration: time.Second}); err == nil || !strings.Contains(err.Error(), "Resolve") {
		t.Errorf("a name as Resolve: %v, want a refusal naming Resolve", err)
	}
}
