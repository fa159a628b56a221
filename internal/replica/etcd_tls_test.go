package replica

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/poll"
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

// startTLSEtcd runs an embedded etcd member that serves clients over TLS
// only and requires a client certificate signed by the test CA. It returns
// the https endpoint.
func startTLSEtcd(t *testing.T, p pki) string {
	t.Helper()
	curl, _ := url.Parse("https://127.0.0.1:0")
	purl, _ := url.Parse("http://127.0.0.1:0")
	cfg := embed.NewConfig()
	cfg.Name = "tls"
	cfg.Dir = t.TempDir()
	cfg.ListenClientUrls = []url.URL{*curl}
	cfg.AdvertiseClientUrls = []url.URL{*curl}
	cfg.ListenPeerUrls = []url.URL{*purl}
	cfg.AdvertisePeerUrls = []url.URL{*purl}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = true
	// The lowest bcrypt cost (bcrypt.MinCost): checking a password at the
	// default cost takes most of a second under the race detector.
	cfg.BcryptCost = 4
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.ClientTLSInfo = transport.TLSInfo{
		CertFile:       p.ServerCert,
		KeyFile:        p.ServerKey,
		TrustedCAFile:  p.CA,
		ClientCertAuth: true,
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("tls etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("tls etcd: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("tls etcd: not ready after a minute")
	}
	return "https://" + e.Clients[0].Addr().String()
}

// adminClient talks to the TLS member with the test client certificate,
// and with root's password once auth is on.
func adminClient(t *testing.T, p pki, endpoint, user, password string) *clientv3.Client {
	t.Helper()
	tc, err := (transport.TLSInfo{TrustedCAFile: p.CA, CertFile: p.ClientCert, KeyFile: p.ClientKey}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{endpoint}, TLS: tc, Username: user, Password: password,
		DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

const rootPassword = "r00t-pw"

// enableAuth creates root (role root) and sched, whose role can read and
// write the scheduler's prefix and nothing else, then turns auth on.
func enableAuth(t *testing.T, p pki, endpoint, prefix, schedPassword string) {
	t.Helper()
	cli := adminClient(t, p, endpoint, "", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	steps := []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", rootPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, "sched"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, "sched", prefix, clientv3.GetPrefixRangeEnd(prefix),
				clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, "sched", schedPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "sched", "sched"); return err },
		// A user with no role at all: authenticates, may read nothing.
		func() error { _, err := cli.UserAdd(ctx, "nobody", "nobody-pw"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("enable auth, step %d: %v", i, err)
		}
	}
}

// tlsConfig is a replica config for the TLS member with the etcd settings
// given (indented under cluster.etcd) and an exec job to trigger.
func tlsConfig(endpoint, prefix, etcd string) string {
	return fmt.Sprintf(`cluster:
  etcd:
    endpoints: [%q]
    prefix: %s
    dial_timeout: 5s
%s
  session_ttl: 2s
  lease_margin: 500ms
api:
  listen: 127.0.0.1:0
jobs:
  - name: echo
    schedule: "0 0 1 1 *"
    catch_up: none
    exec:
      command: ["echo", "hello"]
`, endpoint, prefix, etcd)
}

func tlsFiles(ca, cert, key string) string {
	s := "    tls:\n"
	if ca != "" {
		s += fmt.Sprintf("      ca_file: %s\n", ca)
	}
	if cert != "" {
		s += fmt.Sprintf("      cert_file: %s\n      key_file: %s\n", cert, key)
	}
	return s
}

func userPassword(t *testing.T, user, password string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(f, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("    username: %s\n    password_file: %s\n", user, f)
}

// writeConfig writes the config into a fresh directory and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	writeFile(t, path, content)
	return path
}

// checkWorks starts a replica on the config, waits for /readyz, triggers a
// run and waits for it to succeed.
func checkWorks(t *testing.T, id, path string) {
	t.Helper()
	r := startReplica(t, id, path, noWatch)
	runID := r.trigger("echo", "")
	if got := r.waitRun(runID, "finished", 20*time.Second); got.Outcome != "succeeded" {
		t.Errorf("run %s: outcome %q (%s), want succeeded", runID, got.Outcome, got.Error)
	}
	if err := r.api.Ready(context.Background()); err != nil {
		t.Errorf("/readyz after the run: %v", err)
	}
}

// startRefused runs a replica that must refuse to start: Run returns an
// ErrStart mentioning every part of want, within the dial timeout and some
// slack, and never answers /readyz with 200 meanwhile.
func startRefused(t *testing.T, path string, want ...string) {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logSink{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- Run(ctx, Options{Config: cfg, ConfigPath: path, ID: "refused", Version: "test", NoWatch: true,
			Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	}()
	limit := cfg.Cluster.Etcd.DialTimeout.D() + 5*time.Second
	select {
	case err = <-done:
	case <-time.After(limit):
		cancel()
		err = <-done
		t.Fatalf("replica still starting %s after Run began (etcd warning: %v); Run returned %v after cancel",
			limit, logs.find("etcd not answering yet; starting anyway, the session will keep trying"), err)
	}
	took := time.Since(start)
	if !errors.Is(err, ErrStart) {
		t.Fatalf("Run = %v, want ErrStart", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Run error %q does not mention %q", err, w)
		}
	}
	t.Logf("refused after %s: %v", took.Round(time.Millisecond), err)
}

// A replica reaches an etcd that requires client certificates with the
// configured CA, certificate and key, and refuses to start, saying why,
// without them.
func TestEtcdTLS(t *testing.T) {
	p := newPKI(t)
	endpoint := startTLSEtcd(t, p)

	t.Run("mutual TLS", func(t *testing.T) {
		checkWorks(t, "tls1", writeConfig(t, tlsConfig(endpoint, "/tls/", tlsFiles(p.CA, p.ClientCert, p.ClientKey))))
	})
	t.Run("no client certificate", func(t *testing.T) {
		startRefused(t, writeConfig(t, tlsConfig(endpoint, "/tls-nocert/", tlsFiles(p.CA, "", ""))),
			"TLS", "certificate")
	})
	t.Run("wrong CA", func(t *testing.T) {
		startRefused(t, writeConfig(t, tlsConfig(endpoint, "/tls-ca/", tlsFiles(p.OtherCA, p.ClientCert, p.ClientKey))),
			"TLS", "x509")
	})
	t.Run("http endpoint with tls set", func(t *testing.T) {
		// The etcd client would talk plain text to it and never get an answer.
		plain := "http://" + strings.TrimPrefix(endpoint, "https://")
		startRefused(t, writeConfig(t, tlsConfig(plain, "/tls-http/", tlsFiles(p.CA, p.ClientCert, p.ClientKey))),
			"https://")
	})
}

// An etcd that does not answer at startup is not a reason to refuse: it may
// be starting too. The replica says so, keeps trying and is not ready.
func TestEtcdNotAnsweringAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "https://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	p := newPKI(t)
	path := writeConfig(t, tlsConfig(endpoint, "/down/", tlsFiles(p.CA, p.ClientCert, p.ClientKey)))
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cluster.Etcd.DialTimeout = config.Duration(300 * time.Millisecond)
	logs := &logSink{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Config: cfg, ConfigPath: path, ID: "down", Version: "test", NoWatch: true,
			Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	}()
	const warning = "etcd not answering yet; starting anyway, the session will keep trying"
	poll.Until(t, 10*time.Second, "warning that etcd does not answer", func() (bool, string) {
		select {
		case err := <-done:
			t.Fatalf("Run returned %v while etcd was only down", err)
		default:
		}
		return logs.find(warning) != nil, "no warning yet"
	})
	// The API is served after start returned: once it answers, start went on.
	r := &testReplica{t: t}
	poll.Until(t, 10*time.Second, "api listening", func() (bool, string) {
		rec := logs.find("api listening")
		if rec == nil {
			return false, "no 'api listening' line"
		}
		if r.api == nil {
			r.url = "http://" + rec["addr"].(string)
			r.api = r.client("")
		}
		err := r.api.Healthy(context.Background())
		return err == nil, fmt.Sprintf("/healthz: %v", err)
	})
	if err := r.api.Ready(context.Background()); statusOf(err) != http.StatusServiceUnavailable {
		t.Errorf("/readyz with etcd down: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return 30s after cancel")
	}
}

// With auth enabled, username and password_file authenticate the replica; a
// wrong password, a missing username or a user without permission on the
// prefix make it refuse to start, saying why.
func TestEtcdAuth(t *testing.T) {
	p := newPKI(t)
	endpoint := startTLSEtcd(t, p)
	const prefix = "/authn/"
	enableAuth(t, p, endpoint, prefix, "sched-pw")
	certs := tlsFiles(p.CA, p.ClientCert, p.ClientKey)

	t.Run("root", func(t *testing.T) {
		checkWorks(t, "root1", writeConfig(t, tlsConfig(endpoint, "/root/", certs+userPassword(t, "root", rootPassword))))
	})
	t.Run("user limited to the prefix", func(t *testing.T) {
		checkWorks(t, "sched1", writeConfig(t, tlsConfig(endpoint, prefix, certs+userPassword(t, "sched", "sched-pw"))))
	})
	t.Run("password file with a trailing newline", func(t *testing.T) {
		// What a Kubernetes secret made with a heredoc or echo holds.
		checkWorks(t, "sched2", writeConfig(t, tlsConfig(endpoint, prefix, certs+userPassword(t, "sched", "sched-pw\n"))))
	})
	t.Run("client certificate's common name as the user", func(t *testing.T) {
		// No username: etcd takes the user from the certificate.
		checkWorks(t, "sched3", writeConfig(t, tlsConfig(endpoint, prefix, tlsFiles(p.CA, p.SchedCert, p.SchedKey))))
	})
	t.Run("wrong password", func(t *testing.T) {
		startRefused(t, writeConfig(t, tlsConfig(endpoint, prefix, certs+userPassword(t, "sched", "sched-pwx"))),
			"authentication failed")
	})
	t.Run("no username", func(t *testing.T) {
		startRefused(t, writeConfig(t, tlsConfig(endpoint, prefix, certs)), "authentication enabled", "username")
	})
	t.Run("no permission on the prefix", func(t *testing.T) {
		startRefused(t, writeConfig(t, tlsConfig(endpoint, prefix, certs+userPassword(t, "nobody", "nobody-pw"))),
			"permission denied", prefix)
	})
	t.Run("empty password file", func(t *testing.T) {
		startRefused(t, writeConfig(t, tlsConfig(endpoint, prefix, certs+userPassword(t, "sched", "\n"))),
			"password_file", "empty")
	})
}
