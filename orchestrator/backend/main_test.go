package backend

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/wafsweep/wafsweep/orchestrator/tlscert"
)

// The subcommand the local target runs for the direct flavor serves the
// transport its flags name: here HTTP/2 over TLS with the run's pair.
func TestMainServesHTTP2OverTLS(t *testing.T) {
	certs, err := tlscert.Generate(t.TempDir(), tlscert.Loopback("wafsweep.test"))
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := startRun(t, "--listen", "127.0.0.1:0", "--http2", "--tls-cert", certs.Cert, "--tls-key", certs.Key)
	caPEM, err := os.ReadFile(certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
	resp, err := client.Get("https://" + addr + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Errorf("got %d over %s, want 200 over HTTP/2", resp.StatusCode, resp.Proto)
	}
	stop()
	if code := run(context.Background(), []string{"--tls-cert", certs.Cert}, io.Discard, io.Discard); code != 1 {
		t.Errorf("a certificate without its key: exit code %d, want 1", code)
	}
}
