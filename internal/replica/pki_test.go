package replica

import (
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
)

// pki is a throwaway CA with a server certificate for 127.0.0.1 and a client
// certificate, as PEM files in a test's temporary directory.
type pki struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
	// SchedCert's common name is the etcd user sched.
	SchedCert, SchedKey string
	// OtherCA signed nothing here: trusting it instead of CA must fail.
	OtherCA string
}

// newPKI writes the certificates: ECDSA P-256, valid for an hour.
func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	caCert, caKey := newCA(t, dir, "ca", "scheduler test CA")
	newCA(t, dir, "other-ca", "some other CA")
	p := pki{CA: filepath.Join(dir, "ca.pem"), OtherCA: filepath.Join(dir, "other-ca.pem")}
	// The server certificate is also a client one: etcd's gateway dials its
	// own gRPC port with it when client certificates are required.
	p.ServerCert, p.ServerKey = newLeaf(t, dir, "server", caCert, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "etcd"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
	// With auth enabled, etcd takes a client certificate's common name as
	// the user when a request carries no token: this one names no user, so
	// username and password are what authenticates.
	p.ClientCert, p.ClientKey = newLeaf(t, dir, "client", caCert, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "scheduler-client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	p.SchedCert, p.SchedKey = newLeaf(t, dir, "sched", caCert, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "sched"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return p
}

func nextSerial(t *testing.T) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func newCA(t *testing.T, dir, name, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(t),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
	return cert, key
}

func newLeaf(t *testing.T, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = nextSerial(t)
	tmpl.NotBefore = time.Now().Add(-time.Minute)
	tmpl.NotAfter = time.Now().Add(time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", kder)
	return certFile, keyFile
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
