package tlscert

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"testing"
)

// A client trusting only the run's CA completes a real handshake with a
// server using the generated pair, for each name the certificate is
// meant for, and refuses every other name.
func TestGeneratedPairHandshakes(t *testing.T) {
	files, err := Generate(t.TempDir(), Loopback("wafsweep.test"))
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("the CA file holds no certificate")
	}
	for _, tc := range []struct {
		serverName string
		ok         bool
	}{
		{"wafsweep.test", true},
		{"127.0.0.1", true},
		{"example.com", false},
		{"127.0.0.2", false},
	} {
		t.Run(tc.serverName, func(t *testing.T) {
			err := handshake(t, pair, &tls.Config{RootCAs: roots, ServerName: tc.serverName})
			if (err == nil) != tc.ok {
				t.Fatalf("handshake as %s: %v, want ok=%v", tc.serverName, err, tc.ok)
			}
		})
	}
}

func handshake(t *testing.T, pair tls.Certificate, client *tls.Config) error {
	t.Helper()
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	server := tls.Server(s, &tls.Config{Certificates: []tls.Certificate{pair}})
	go server.Handshake() // its error is the client's, seen from the other side
	return tls.Client(c, client).Handshake()
}

func TestKeyIsPrivateAndRunsDiffer(t *testing.T) {
	a, err := Generate(t.TempDir(), Loopback("wafsweep.test"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(t.TempDir(), Loopback("wafsweep.test"))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(a.Key)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 0600", fi.Mode().Perm())
	}
	if a.Fingerprint == b.Fingerprint || len(a.Fingerprint) != 64 {
		t.Errorf("fingerprints %q and %q: want two different SHA-256 digests", a.Fingerprint, b.Fingerprint)
	}
}

func TestGenerateNeedsAName(t *testing.T) {
	if _, err := Generate(t.TempDir(), Spec{}); err == nil {
		t.Fatal("a certificate for no name was generated")
	}
}
