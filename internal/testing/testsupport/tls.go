package testsupport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/testing/harness"
)

// TLSFiles are PEM files of a test PKI: a CA, a server certificate for
// 127.0.0.1 and localhost, and a client certificate, all signed by the CA.
type TLSFiles struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
	// OtherCA is a CA that signed nothing here: trusting it must fail.
	OtherCA string
}

// NewTLSFiles generates a test PKI in a temporary directory.
func NewTLSFiles(t testing.TB) TLSFiles {
	t.Helper()
	dir := t.TempDir()
	caKey, caCert, caDER := newCA(t, "pdfexport test CA")
	f := TLSFiles{
		CA:         writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
	}
	issue(t, caKey, caCert, f.ServerCert, f.ServerKey, x509.ExtKeyUsageServerAuth)
	issue(t, caKey, caCert, f.ClientCert, f.ClientKey, x509.ExtKeyUsageClientAuth)
	_, _, otherDER := newCA(t, "unrelated CA")
	f.OtherCA = writePEM(t, dir, "other-ca.pem", "CERTIFICATE", otherDER)
	return f
}

func newCA(t testing.TB, name string) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func issue(t testing.TB, caKey *ecdsa.PrivateKey, ca *x509.Certificate, certPath, keyPath string, usage x509.ExtKeyUsage) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Dir(certPath), filepath.Base(certPath), "CERTIFICATE", der)
	writePEM(t, filepath.Dir(keyPath), filepath.Base(keyPath), "EC PRIVATE KEY", keyDER)
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// RedisTLSArgs are redis-server arguments serving TLS with f's server
// certificate and requiring client certificates signed by f's CA.
func (f TLSFiles) RedisTLSArgs() []string {
	return []string{"--tls-cert-file", f.ServerCert, "--tls-key-file", f.ServerKey, "--tls-ca-cert-file", f.CA,
		"--tls-auth-clients", "yes", "--tls-replication", "yes", "--tls-cluster", "yes"}
}

// ACLUser and ACLPassword are the one user of StartRedisTLS's server.
const ACLUser, ACLPassword = "exporter", "ACL-PW-7e1a"

// StartRedisTLS starts a redis-server that speaks only TLS (client
// certificates signed by pki's CA required) and knows one ACL user
// (ACLUser, ACLPassword); the default user is off. It stops at test end.
func StartRedisTLS(t testing.TB, pki TLSFiles) *harness.Redis {
	t.Helper()
	SkipShort(t, "redis-server (TLS)")
	args := append(pki.RedisTLSArgs(), "--user", "default", "off", "--user", ACLUser, "on", ">"+ACLPassword, "~*", "&*", "+@all")
	srv, err := harness.StartRedisWith(context.Background(), filepath.Join(t.TempDir(), "redis"), harness.RedisOptions{TLS: true, Extra: args})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}
