package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/logtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// tlsConfig is a replica config for the TLS member with the etcd settings
// given (indented under cluster.etcd) and an exec job to trigger: the
// tests' config with those settings after the prefix.
func tlsConfig(endpoint, prefix, etcd string) string {
	at := "    prefix: " + prefix + "\n"
	return strings.Replace(etcdtest.Config(endpoint, prefix, echoJob), at, at+"    dial_timeout: 5s\n"+etcd, 1)
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
	logs := &logtest.Sink{}
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
			limit, logs.Find("etcd not answering yet; starting anyway, the session will keep trying"), err)
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
	logs := &logtest.Sink{}
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
		return logs.Find(warning) != nil, "no warning yet"
	})
	// The API is served after start returned: once it answers, start went on.
	r := &testReplica{t: t}
	poll.Until(t, 10*time.Second, "api listening", func() (bool, string) {
		rec := logs.Find("api listening")
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
