// Package replica assembles one scheduler process: etcd (embedded or
// external), the session, election, slots, the dispatch engine and the API,
// and takes them down in the order SPEC section 9 asks for.
package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/api"
	"github.com/etcdsched/scheduler/internal/embedetcd"
	"github.com/etcdsched/scheduler/internal/session"
)

// Options are what main hands over.
type Options struct {
	Config     *config.Config
	ConfigPath string
	ID         string
	Version    string
	Logger     *slog.Logger
	// Reload delivers SIGHUP.
	Reload <-chan os.Signal
}

// Run runs the replica until ctx ends, then shuts it down gracefully.
func Run(ctx context.Context, opts Options) error {
	if opts.ID == "" {
		opts.ID = defaultID()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &replica{opts: opts, log: opts.Logger.With("replica", opts.ID), started: time.Now()}
	r.cfg = opts.Config
	return r.run(ctx)
}

type replica struct {
	opts    Options
	log     *slog.Logger
	started time.Time

	mu        sync.Mutex
	cfg       *config.Config
	reloadErr error
	reloadAt  time.Time

	embedded  *embedetcd.Server
	endpoints []string
	client    *clientv3.Client
	sessions  *session.Manager
	api       *api.Server
}

func (r *replica) config() *config.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg
}

func (r *replica) run(ctx context.Context) (err error) {
	cfg := r.config()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	r.endpoints = cfg.Cluster.Etcd.Endpoints
	if len(r.endpoints) == 0 {
		r.embedded, err = startEmbedded(ctx, cfg.Cluster, r.log)
		if err != nil {
			return err
		}
		// Stopped last: it waits for open client streams, so everything
		// that talks to it must be closed first.
		defer func() {
			r.embedded.Close()
			r.log.Info("embedded etcd stopped")
		}()
		r.endpoints = r.embedded.Endpoints()
	}
	r.client, err = connect(cfg.Cluster.Etcd, r.endpoints)
	if err != nil {
		return err
	}
	defer func() { _ = r.client.Close() }()

	r.sessions, err = session.NewManager(r.client, session.Options{
		TTL:    cfg.Cluster.SessionTTL.D(),
		Margin: cfg.Cluster.LeaseMargin.D(),
		Logger: r.log.With("component", "session"),
	}, reg)
	if err != nil {
		return err
	}

	r.api, err = api.New(api.Options{
		Listen:       cfg.API.Listen,
		TokenFile:    cfg.API.TokenFile,
		ProtectReads: cfg.API.ProtectReads,
		Logger:       r.log.With("component", "api"),
		Gatherer:     reg,
		Status:       r.status,
		Ready:        r.ready,
	})
	if err != nil {
		return err
	}
	if err := r.api.Listen(); err != nil {
		return err
	}
	r.log.Info("api listening", "addr", r.api.Addr())

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	serve := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	sessCtx, stopSessions := context.WithCancel(context.Background())
	serve("session", func() error { return r.sessions.Run(sessCtx) })
	serve("api", r.api.Serve)

	var runErr error
	select {
	case <-ctx.Done():
		r.log.Info("shutting down")
	case runErr = <-errs:
		r.log.Error("component failed; shutting down", "err", runErr)
	}

	// Stop work first, then give up the lease (revoking deletes every
	// session key at once), then stop answering.
	stopSessions()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.api.Shutdown(shutdownCtx); err != nil {
		r.log.Warn("api shutdown", "err", err)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		runErr = errors.Join(runErr, e)
	}
	r.log.Info("stopped")
	return runErr
}

func (r *replica) status() api.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := api.Status{
		ID:            r.opts.ID,
		Version:       r.opts.Version,
		ConfigFile:    r.opts.ConfigPath,
		ConfigHash:    r.cfg.Hash(),
		StartedAt:     r.started,
		EtcdEndpoints: r.endpoints,
		EmbeddedEtcd:  r.embedded != nil,
		LastReloadAt:  r.reloadAt,
	}
	if r.reloadErr != nil {
		st.LastReloadError = r.reloadErr.Error()
	}
	return st
}

// ready: etcd answers a linearizable read and the session is alive.
func (r *replica) ready(ctx context.Context) error {
	if _, err := r.client.Get(ctx, r.config().Cluster.Etcd.Prefix+"members/", clientv3.WithCountOnly()); err != nil {
		return fmt.Errorf("etcd unreachable: %w", err)
	}
	if !r.sessions.Alive() {
		return errors.New("no live session")
	}
	return nil
}
