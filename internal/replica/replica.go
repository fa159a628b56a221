// Package replica assembles one scheduler process: etcd (embedded or
// external), the session, election, slots, the dispatch engine and the API,
// and takes them down in the order docs/design.md#start-and-stop-order asks for.
package replica

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/api"
	"github.com/etcdsched/scheduler/internal/embedetcd"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/watch"
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
	// NoWatch turns off reloading when the config file changes; SIGHUP
	// still reloads.
	NoWatch bool
	// Overrides re-applies the command line and environment to a config
	// read again on reload.
	Overrides func(*config.Config)
	// Supervised: this binary's main calls target.Supervise first
	// (NodeOptions.Supervised).
	Supervised bool
}

// ErrStart wraps what keeps a replica from starting (the API address in use,
// an unusable etcd setting), as opposed to a failure while it ran.
var ErrStart = errors.New("replica: cannot start")

// Run runs the replica until ctx ends, then shuts it down gracefully.
func Run(ctx context.Context, opts Options) error {
	if opts.ID == "" {
		opts.ID = defaultID()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &replica{opts: opts, log: opts.Logger.With("replica", opts.ID), started: time.Now()}
	r.cfg, r.cfgHash, r.appliedAt = opts.Config, opts.Config.Hash(), r.started
	return r.run(ctx)
}

type replica struct {
	opts    Options
	log     *slog.Logger
	started time.Time

	mu        sync.Mutex
	cfg       *config.Config
	cfgHash   string // cfg.Hash(), which encodes every job: kept, not recomputed per request
	appliedAt time.Time
	reloadErr error
	reloadAt  time.Time
	fileSum   fileSum // of the config file content last read

	cleanups []func() // run last first, after the stages stopped

	embedded  *embedetcd.Server
	endpoints []string
	client    *clientv3.Client
	node      *Node
	api       *api.Server
	reloads   *reloadMetrics

	// draining is set once shutdown began: /readyz answers 503 from then on,
	// so a load balancer stops sending API traffic while runs finish.
	draining atomic.Bool
}

func (r *replica) config() *config.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg
}

// applied is what GET /api/v1/config shows.
func (r *replica) applied() api.Applied {
	r.mu.Lock()
	defer r.mu.Unlock()
	return api.Applied{Config: r.cfg, Hash: r.cfgHash, AppliedAt: r.appliedAt}
}

func (r *replica) configHash() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfgHash
}

func (r *replica) run(ctx context.Context) error {
	reg := prometheus.NewRegistry()
	if err := r.start(ctx, reg); err != nil {
		r.runCleanups()
		return fmt.Errorf("%w: %w", ErrStart, err)
	}
	return r.serve(ctx)
}

// start binds the API address first, so a port in use fails at once and
// before an embedded etcd is started, then builds the parts.
func (r *replica) start(ctx context.Context, reg *prometheus.Registry) (err error) {
	cfg := r.config()
	if data, err := os.ReadFile(r.opts.ConfigPath); err == nil {
		r.fileSum = sha256.Sum256(data)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if r.reloads, err = newReloadMetrics(reg); err != nil {
		return err
	}
	if err := r.startAPI(cfg, reg); err != nil {
		return err
	}
	if err := r.startEtcd(ctx, cfg, reg); err != nil {
		return err
	}
	apiAddr := advertised(r.api.Addr())
	r.log.Info("api listening", "addr", r.api.Addr(), "advertised", apiAddr)
	r.node, err = NewNode(NodeOptions{
		Client: r.client, ID: r.opts.ID, APIAddr: apiAddr, Version: r.opts.Version,
		Config: r.config, ConfigHash: r.configHash(), StartedAt: r.started,
		Logger: r.log, Reg: reg, Supervised: r.opts.Supervised,
	})
	if err != nil {
		return err
	}
	r.api.SetCluster(cluster{Engine: r.node.Engine, sessions: r.node.Sessions, elector: r.node.Elector, membership: r.node.Membership, slots: r.node.Slots})
	return nil
}

// startAPI binds the API's address, so the replica knows it before it
// registers as a member; the cluster routes answer 503 until the node is
// wired.
func (r *replica) startAPI(cfg *config.Config, reg *prometheus.Registry) (err error) {
	r.api, err = api.New(api.Options{
		Listen:       cfg.API.Listen,
		TokenFile:    cfg.API.TokenFile,
		ProtectReads: cfg.API.ProtectReads,
		Tokens:       cfg.API.Tokens,
		Registerer:   reg,
		Logger:       r.log.With("component", "api"),
		Gatherer:     reg,
		Status:       r.status,
		Ready:        r.ready,
		Config:       r.applied,
	})
	if err != nil {
		return err
	}
	if err := r.api.Listen(); err != nil {
		return err
	}
	r.cleanup(func() { _ = r.api.Close() })
	return nil
}

// startEtcd starts the embedded etcd when the config names no endpoints,
// connects to the cluster and checks that it can be used.
func (r *replica) startEtcd(ctx context.Context, cfg *config.Config, reg *prometheus.Registry) (err error) {
	r.endpoints = cfg.Cluster.Etcd.Endpoints
	if len(r.endpoints) == 0 {
		r.embedded, err = startEmbedded(ctx, cfg.Cluster, r.log)
		if err != nil {
			return err
		}
		// Stopped last: it waits for open client streams, so everything
		// that talks to it must be closed first.
		r.cleanup(func() {
			r.embedded.Close()
			r.log.Info("embedded etcd stopped")
		})
		r.endpoints = r.embedded.Endpoints()
	}
	countEvents, err := watch.EventCounter(reg, keys.Kinds(), keys.New(cfg.Cluster.Etcd.Prefix).Kind)
	if err != nil {
		return err
	}
	r.client, err = connect(ctx, cfg.Cluster.Etcd, r.endpoints, countEvents)
	if err != nil {
		return err
	}
	r.cleanup(func() { _ = r.client.Close() })
	return checkEtcd(ctx, r.client, cfg.Cluster.Etcd, r.log)
}

// serve runs the parts until ctx ends or one fails, then shuts down in the
// order of docs/design.md#start-and-stop-order.
func (r *replica) serve(ctx context.Context) error {
	defer r.runCleanups()
	r.node.Start()
	apiDone := make(chan error, 1)
	go func() { apiDone <- r.api.Serve() }()
	if r.opts.Reload != nil {
		r.node.ServeWork("reload", func(ctx context.Context) error { r.serveReloads(ctx, r.opts.Reload); return nil })
	}
	if !r.opts.NoWatch && r.opts.ConfigPath != "" {
		r.node.ServeWork("config watch", r.watchConfig)
	}

	var runErr error
	apiServing := true
	select {
	case <-ctx.Done():
		r.log.Info("shutting down")
	case runErr = <-r.node.Failed():
		r.log.Error("component failed; shutting down", "err", runErr)
	case runErr = <-apiDone:
		apiServing = false
		r.log.Error("api server failed; shutting down", "err", runErr)
	}

	// From here /readyz answers 503, while runs drain.
	r.draining.Store(true)
	nodeErr := r.node.Stop(r.config().Worker.ShutdownGrace.D())
	// The API answers until here, so the drain can be watched.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), StopSteps)
	defer cancel()
	if err := r.api.Shutdown(shutdownCtx); err != nil {
		r.log.Warn("api shutdown", "err", err)
	}
	if apiServing {
		if err := <-apiDone; err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	runErr = errors.Join(runErr, nodeErr)
	r.log.Info("stopped")
	return runErr
}

// cleanup registers f to run at exit, before the ones registered earlier:
// the client closes before the embedded etcd it talks to stops.
func (r *replica) cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *replica) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.cleanups = nil
}

func (r *replica) status(ctx context.Context) api.Status {
	r.mu.Lock()
	node := r.node
	st := api.Status{
		ID:            r.opts.ID,
		IsLeader:      node != nil && node.Elector.IsLeader(),
		Version:       r.opts.Version,
		ConfigFile:    r.opts.ConfigPath,
		ConfigHash:    r.cfgHash,
		ConfigFiles:   r.cfg.Files,
		StartedAt:     r.started,
		EtcdEndpoints: r.endpoints,
		EmbeddedEtcd:  r.embedded != nil,
		LastReloadAt:  r.reloadAt,
	}
	if r.reloadErr != nil {
		st.LastReloadError = r.reloadErr.Error()
	}
	r.mu.Unlock()
	if node == nil {
		return st
	}
	// Outside the lock: with the election's watch down, Leader reads etcd.
	// No leader, or etcd away, leaves the field empty; /api/v1/leader is
	// where the reason is told.
	if l, err := node.Elector.Leader(ctx); err == nil {
		st.Leader = l.ID
	}
	st.PendingBySink, st.OldestNotification = node.Engine.Notifications()
	for _, n := range st.PendingBySink {
		st.PendingNotifications += n
	}
	return st
}

// ready: not shutting down, etcd answers a linearizable read and the
// session is alive.
func (r *replica) ready(ctx context.Context) error {
	if r.draining.Load() {
		return errors.New("shutting down: no new claims, draining runs")
	}
	if _, err := r.client.Get(ctx, keys.New(r.config().Cluster.Etcd.Prefix).Members(), clientv3.WithCountOnly()); err != nil {
		return fmt.Errorf("etcd unreachable: %w", err)
	}
	if !r.node.Sessions.Alive() {
		return errors.New("no live session")
	}
	return nil
}
