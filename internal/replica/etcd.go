package replica

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/embedetcd"
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
// config has them.
func connect(cfg config.Etcd, endpoints []string) (*clientv3.Client, error) {
	cc := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: cfg.DialTimeout.D(),
		Logger:      zap.NewNop(),
		// Keepalive pings let a dead connection surface as an error rather
		// than a request that hangs.
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
	}
	if cfg.TLS.CAFile != "" || cfg.TLS.CertFile != "" {
		info := transport.TLSInfo{TrustedCAFile: cfg.TLS.CAFile, CertFile: cfg.TLS.CertFile, KeyFile: cfg.TLS.KeyFile}
		tc, err := info.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("etcd tls: %w", err)
		}
		tc.MinVersion = tls.VersionTLS12
		cc.TLS = tc
	}
	if cfg.Username != "" {
		cc.Username = cfg.Username
		if cfg.PasswordFile != "" {
			b, err := os.ReadFile(cfg.PasswordFile)
			if err != nil {
				return nil, fmt.Errorf("etcd password file: %w", err)
			}
			cc.Password = strings.TrimRight(string(b), "\r\n")
		}
	}
	cli, err := clientv3.New(cc)
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return cli, nil
}
