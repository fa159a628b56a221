package replica

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/embedetcd"
	"github.com/etcdsched/scheduler/internal/keys"
)

// startEmbedded runs the single-member etcd of a laptop setup, on loopback
// only, with its data in cluster.data_dir.
func startEmbedded(ctx context.Context, cfg config.Cluster, logger *slog.Logger) (*embedetcd.Server, error) {
	dir := filepath.Join(cfg.DataDir, "etcd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded etcd data dir: %w", err)
	}
	srv, err := embedetcd.Start(ctx, embedetcd.Options{DataDir: dir, Name: "scheduler"})
	if err != nil {
		return nil, err
	}
	logger.Info("embedded etcd started", "data_dir", dir, "endpoints", srv.Endpoints())
	return srv, nil
}

// connect builds the etcd client, with TLS and username/password when the
// config has them. Settings that can never work are refused here: a TLS
// handshake either side rejects (see probeTLS), tls set with http://
// endpoints, a username without a password, wrong credentials. dial adds
// gRPC options (the watch event counter).
func connect(ctx context.Context, cfg config.Etcd, endpoints []string, dial ...grpc.DialOption) (*clientv3.Client, error) {
	cc := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: cfg.DialTimeout.D(),
		DialOptions: dial,
		Logger:      zap.NewNop(),
		// Keepalive pings let a dead connection surface as an error rather
		// than a request that hangs.
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
	}
	if cfg.TLS.CAFile != "" || cfg.TLS.CertFile != "" {
		// The etcd client talks plain text to http:// endpoints whatever
		// the TLS settings say.
		for _, ep := range endpoints {
			if strings.HasPrefix(ep, "http://") {
				return nil, fmt.Errorf("cluster.etcd.tls is set but endpoint %q is http://: use https://", ep)
			}
		}
		info := transport.TLSInfo{TrustedCAFile: cfg.TLS.CAFile, CertFile: cfg.TLS.CertFile, KeyFile: cfg.TLS.KeyFile}
		tc, err := info.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd tls: %w", err)
		}
		tc.MinVersion = tls.VersionTLS12
		cc.TLS = tc
	}
	if cfg.Username != "" {
		// The client sends no credentials at all for a username with an
		// empty password: say so rather than run unauthenticated.
		if cfg.PasswordFile == "" {
			return nil, fmt.Errorf("cluster.etcd.username %q is set without password_file", cfg.Username)
		}
		b, err := os.ReadFile(cfg.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("etcd password file: %w", err)
		}
		// A trailing newline is what most secrets and editors leave.
		cc.Username = cfg.Username
		cc.Password = strings.TrimRight(string(b), "\r\n")
		if cc.Password == "" {
			return nil, fmt.Errorf("cluster.etcd.password_file %s is empty", cfg.PasswordFile)
		}
	}
	if err := probeTLS(ctx, cc.TLS, endpoints, cfg.DialTimeout.D()); err != nil {
		return nil, err
	}
	// With a username, New authenticates before it returns, bounded by the
	// dial timeout.
	cli, err := clientv3.New(cc)
	if err != nil {
		if cc.Username != "" && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("authenticating as %q: no answer from %v within dial_timeout %s: %w",
				cc.Username, endpoints, cfg.DialTimeout.D(), err)
		}
		return nil, fmt.Errorf("etcd client: %w", explainEtcdErr(err, cfg))
	}
	return cli, nil
}

// probeTLS makes a TLS connection of its own to each TLS endpoint with the
// client's settings and waits for the server's first bytes. A handshake
// either side rejects comes back at once with the TLS alert or the x509
// error, where the etcd client would wait for a connection until its
// deadline and report only "context deadline exceeded". With TLS 1.3 the
// server checks the client's certificate after the client's side of the
// handshake is done, so only the read sees its alert; an HTTP/2 server that
// accepted the certificate sends its SETTINGS frame first, ending the read.
// Any other outcome, an endpoint that does not answer included, is left to
// the etcd client.
func probeTLS(ctx context.Context, tc *tls.Config, endpoints []string, timeout time.Duration) error {
	for _, ep := range endpoints {
		scheme, addr, found := strings.Cut(ep, "://")
		if !found {
			scheme, addr = "", ep
		}
		if scheme != "https" && (scheme != "" || tc == nil) {
			continue
		}
		c := &tls.Config{}
		if tc != nil {
			c = tc.Clone()
		}
		c.NextProtos = []string{"h2"}
		probeCtx, cancel := context.WithTimeout(ctx, timeout)
		conn, err := (&tls.Dialer{Config: c}).DialContext(probeCtx, "tcp", addr)
		if err == nil {
			deadline, _ := probeCtx.Deadline()
			_ = conn.SetReadDeadline(deadline)
			_, err = conn.Read(make([]byte, 1))
			_ = conn.Close()
		}
		cancel()
		if err != nil && isTLSErr(err) {
			return explainEtcdErr(fmt.Errorf("endpoint %q: %w", ep, err), config.Etcd{})
		}
	}
	return nil
}

// errEtcdUnusable marks an etcd error that retrying cannot fix: the
// certificates, the credentials or the permissions are wrong.
var errEtcdUnusable = errors.New("unusable etcd settings")

// checkEtcd makes one linearizable read under the prefix with the
// configured credentials, bounded by the dial timeout. Settings that can
// never work (wrong credentials, auth on but no username, no permission on
// the prefix) are returned, so the replica refuses to start with the reason
// instead of waiting for a session it can never create or failing later in
// the election. An etcd that does not answer yet is only logged: it may be
// starting too, and the session keeps retrying.
func checkEtcd(ctx context.Context, cli *clientv3.Client, cfg config.Etcd, log *slog.Logger) error {
	callCtx, cancel := context.WithTimeout(ctx, cfg.DialTimeout.D())
	defer cancel()
	_, err := cli.Get(callCtx, keys.New(cfg.Prefix).Members(), clientv3.WithCountOnly())
	if err == nil {
		return nil
	}
	if xerr := explainEtcdErr(err, cfg); errors.Is(xerr, errEtcdUnusable) {
		return xerr
	}
	if ctx.Err() != nil {
		return nil // shutting down
	}
	log.Warn("etcd not answering yet; starting anyway, the session will keep trying",
		"endpoints", cli.Endpoints(), "dial_timeout", cfg.DialTimeout.D(), "err", err)
	return nil
}

// explainEtcdErr names the setting behind an error that retrying cannot fix
// and marks it errEtcdUnusable; other errors come back unchanged.
func explainEtcdErr(err error, cfg config.Etcd) error {
	switch {
	case errors.Is(err, rpctypes.ErrAuthFailed):
		return fmt.Errorf("%w: etcd rejected user %q: check cluster.etcd.username and password_file: %w",
			errEtcdUnusable, cfg.Username, err)
	case cfg.Username == "" && (errors.Is(err, rpctypes.ErrUserEmpty) || errors.Is(err, rpctypes.ErrPermissionDenied)):
		// With auth on and no token, etcd takes the client certificate's
		// common name, if any, as the user.
		return fmt.Errorf("%w: etcd has authentication enabled and denied the replica access under prefix %q: "+
			"set cluster.etcd.username and password_file (or give the user named by the client certificate's "+
			"common name readwrite on the prefix): %w", errEtcdUnusable, cfg.Prefix, err)
	case errors.Is(err, rpctypes.ErrPermissionDenied):
		return fmt.Errorf("%w: etcd user %q may not read and write under prefix %q: grant its role readwrite on the prefix: %w",
			errEtcdUnusable, cfg.Username, cfg.Prefix, err)
	case isTLSErr(err):
		return fmt.Errorf("%w: etcd TLS handshake failed: check cluster.etcd.tls (ca_file, cert_file, key_file) "+
			"against the server's certificate and the CA it trusts: %w", errEtcdUnusable, err)
	}
	return err
}

// isTLSErr: gRPC reports a failed handshake only as text in the status,
// with the TLS alert or the x509 error of either side.
func isTLSErr(err error) bool {
	msg := err.Error()
	for _, s := range []string{"authentication handshake failed", "tls: ", "x509: "} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
