package backend

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

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
	if code := run(context.Background(), []string{"--tls-listen", "127.0.0.1:0"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("--tls-listen without a certificate: exit code %d, want 2", code)
	}
}

// With --tls-listen one process serves in clear on --listen (a proxy's
// origin) and TLS on the other address (the direct flavor's edge), and its
// summary counts both; --stats-listen answers with the same counts while it
// runs, marked attacks apart.
func TestMainServesClearAndTLSTogether(t *testing.T) {
	certs, err := tlscert.Generate(t.TempDir(), tlscert.Loopback("wafsweep.test"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"--listen", "127.0.0.1:0", "--tls-listen", "127.0.0.1:0", "--stats-listen", "127.0.0.1:0",
			"--http2", "--tls-cert", certs.Cert, "--tls-key", certs.Key}, &stdout, &stderr)
	}()
	var clearAddr, tlsAddr, statsAddr string
	for deadline := time.Now().Add(5 * time.Second); statsAddr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		fmt.Sscanf(stdout.String(), "listening on %s\nlistening for TLS on %s\nstats on %s\n", &clearAddr, &tlsAddr, &statsAddr)
	}
	if statsAddr == "" {
		cancel()
		t.Fatalf("stdout %q, stderr %q: want the three addresses", stdout.String(), stderr.String())
	}
	caPEM, err := os.ReadFile(certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	tlsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for i, get := range []struct {
		client *http.Client
		url    string
	}{{http.DefaultClient, "http://" + clearAddr + "/"}, {tlsClient, "https://" + tlsAddr + "/"}, {tlsClient, "https://" + tlsAddr + "/"}} {
		req, _ := http.NewRequest(http.MethodGet, get.url, nil)
		if i == 1 {
			req.Header.Set(HeaderAttack, "xss")
		}
		resp, err := get.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// Clear HTTP to the TLS address is refused by the TLS stack: the
	// counts below do not include it.
	if resp, err := http.Get("http://" + tlsAddr + "/"); err == nil {
		resp.Body.Close()
	}
	if st, err := ReadStats(context.Background(), "http://"+statsAddr); err != nil || st.Requests != 3 || st.Attacks != 1 {
		t.Errorf("stats while serving: %+v %v, want 3 requests, 1 marked", st, err)
	}
	cancel()
	if code := <-exit; code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr.String())
	}
	if want := "backend: served 3 requests, 1 of them marked " + HeaderAttack + "\n"; stderr.String() != want {
		t.Errorf("summary %q, want %q", stderr.String(), want)
	}
}
