// Package tlscert makes the certificates a TLS sweep runs with: a CA of
// its own and a server certificate it signs, generated for the run and
// valid only for loopback names, so no key outlives the run and nothing is
// ever trusted beyond it.
package tlscert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// File names Generate writes in its directory.
const (
	CAFileName   = "ca.pem"
	CertFileName = "server.pem"
	KeyFileName  = "server-key.pem"
)

// validity bounds the certificates: a sweep resumed the next day gets new
// ones, so a short life costs nothing.
const validity = 7 * 24 * time.Hour

// Files are the PEM files of one run.
type Files struct {
	CA   string // the CA certificate clients trust
	Cert string // the server certificate chain (leaf, then CA)
	Key  string // the server's private key (mode 0600)
	// Fingerprint is the SHA-256 of the leaf certificate's DER, hex: what
	// the metadata records instead of the key.
	Fingerprint string
}

// Spec names what the server certificate is valid for.
type Spec struct {
	DNSNames []string
	IPs      []net.IP
}

// Loopback is the usual Spec: the Host the load generator sends and
// 127.0.0.1, the only address any traffic goes to.
func Loopback(host string) Spec {
	return Spec{DNSNames: []string{host}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}
}

// Generate writes a fresh CA and a server certificate for spec into dir
// (created if need be). Both use ECDSA P-256, what a production edge
// proxy would most likely serve.
func Generate(dir string, spec Spec) (Files, error) {
	if len(spec.DNSNames) == 0 && len(spec.IPs) == 0 {
		return Files{}, errors.New("tlscert: the server certificate needs at least one name or address")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Files{}, fmt.Errorf("tlscert: %w", err)
	}
	now := time.Now().Add(-time.Minute) // tolerate a clock a little behind
	caKey, caCert, err := newCA(now)
	if err != nil {
		return Files{}, err
	}
	leafKey, leafDER, err := newLeaf(spec, now, caKey, caCert)
	if err != nil {
		return Files{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(leafKey)
	if err != nil {
		return Files{}, fmt.Errorf("tlscert: encode the server key: %w", err)
	}
	sum := sha256.Sum256(leafDER)
	f := Files{
		CA: filepath.Join(dir, CAFileName), Cert: filepath.Join(dir, CertFileName),
		Key: filepath.Join(dir, KeyFileName), Fingerprint: hex.EncodeToString(sum[:]),
	}
	writes := []struct {
		path   string
		blocks []*pem.Block
		mode   os.FileMode
	}{
		{f.CA, []*pem.Block{certBlock(caCert.Raw)}, 0o644},
		{f.Cert, []*pem.Block{certBlock(leafDER), certBlock(caCert.Raw)}, 0o644},
		// Readable by the proxy only: nginx's workers run as another
		// user but nginx reads the key as root, before it drops privileges.
		{f.Key, []*pem.Block{{Type: "PRIVATE KEY", Bytes: keyDER}}, 0o600},
	}
	for _, w := range writes {
		if err := writePEM(w.path, w.mode, w.blocks); err != nil {
			return Files{}, err
		}
	}
	return f, nil
}

func newCA(now time.Time) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, serial, err := newKeyAndSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "wafsweep run CA"},
		NotBefore:             now,
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("tlscert: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("tlscert: CA certificate: %w", err)
	}
	return key, cert, nil
}

func newLeaf(spec Spec, now time.Time, caKey *ecdsa.PrivateKey, ca *x509.Certificate) (*ecdsa.PrivateKey, []byte, error) {
	key, serial, err := newKeyAndSerial()
	if err != nil {
		return nil, nil, err
	}
	name := "127.0.0.1"
	if len(spec.DNSNames) > 0 {
		name = spec.DNSNames[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     spec.DNSNames,
		IPAddresses:  spec.IPs,
		NotBefore:    now,
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("tlscert: server certificate: %w", err)
	}
	return key, der, nil
}

// newKeyAndSerial is what every certificate here starts from: a P-256
// key and a random 127-bit serial number.
func newKeyAndSerial() (*ecdsa.PrivateKey, *big.Int, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tlscert: key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("tlscert: serial number: %w", err)
	}
	return key, serial, nil
}

func certBlock(der []byte) *pem.Block { return &pem.Block{Type: "CERTIFICATE", Bytes: der} }

func writePEM(path string, mode os.FileMode, blocks []*pem.Block) error {
	var data []byte
	for _, b := range blocks {
		data = append(data, pem.EncodeToMemory(b)...)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("tlscert: %w", err)
	}
	return nil
}
