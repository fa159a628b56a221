// Package embedetcd runs a single-member etcd inside the scheduler process, so
// one command runs the whole service on a laptop and tests talk to a real
// etcd without a separate install.
package embedetcd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Options says where the member keeps its data and how it listens.
type Options struct {
	// DataDir holds the member's WAL and snapshots; it is created if missing.
	DataDir string
	// Name is the member name; "default" when empty.
	Name string
	// ClientURL and PeerURL are loopback URLs; port 0 picks a free port.
	ClientURL string
	PeerURL   string
	// StartTimeout bounds how long Start waits for the member to serve.
	StartTimeout time.Duration
	// Logger receives etcd's own logs; nil discards them.
	Logger *zap.Logger
	// UnsafeNoFsync trades durability for speed; only tests set it.
	UnsafeNoFsync bool
}

// Server is a running embedded etcd member.
type Server struct {
	etcd *embed.Etcd
}

// Start launches the member and waits until it serves clients.
func Start(ctx context.Context, opts Options) (*Server, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("embedetcd: start: %w", err)
	}
	timer := time.NewTimer(opts.StartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return &Server{etcd: e}, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedetcd: serve: %w", err)
	case <-timer.C:
		e.Server.Stop()
		e.Close()
		return nil, fmt.Errorf("embedetcd: not ready after %s", opts.StartTimeout)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
}

// config checks opts, fills in their defaults and makes the member's
// configuration: one member, its own cluster.
func (opts *Options) config() (*embed.Config, error) {
	if opts.DataDir == "" {
		return nil, errors.New("embedetcd: data dir is required")
	}
	if opts.Name == "" {
		opts.Name = "default"
	}
	if opts.ClientURL == "" {
		opts.ClientURL = "http://127.0.0.1:0"
	}
	if opts.PeerURL == "" {
		opts.PeerURL = "http://127.0.0.1:0"
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	curl, err := url.Parse(opts.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("embedetcd: client url %q: %w", opts.ClientURL, err)
	}
	purl, err := url.Parse(opts.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("embedetcd: peer url %q: %w", opts.PeerURL, err)
	}

	cfg := embed.NewConfig()
	cfg.Name = opts.Name
	cfg.Dir = opts.DataDir
	cfg.ListenClientUrls = []url.URL{*curl}
	cfg.AdvertiseClientUrls = []url.URL{*curl}
	cfg.ListenPeerUrls = []url.URL{*purl}
	cfg.AdvertisePeerUrls = []url.URL{*purl}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = opts.UnsafeNoFsync
	if opts.Logger != nil {
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(opts.Logger)
	} else {
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	}

	return cfg, nil
}

// Endpoints are the client URLs the member actually listens on (with the
// chosen port when 0 was asked for).
func (s *Server) Endpoints() []string {
	var eps []string
	for _, l := range s.etcd.Clients {
		eps = append(eps, "http://"+l.Addr().String())
	}
	return eps
}

// Err reports a fatal serving error.
func (s *Server) Err() <-chan error { return s.etcd.Err() }

// Close stops the member. Close sessions and clients first: the server waits
// for open client streams to finish before it returns.
func (s *Server) Close() {
	s.etcd.Close()
}
