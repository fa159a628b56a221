package replica

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/election"
	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/target"
	"github.com/etcdsched/scheduler/internal/tracing"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// Node is the scheduling stack of one replica on an etcd client: its
// session manager, slots view, executor, engine, elector and membership,
// wired, started and stopped in the order of docs/design.md#start-and-stop-order. A replica
// process runs one beside its API; the engine's tests run several in one
// process, so they test the wiring and the stop order the binary has.
type Node struct {
	ID         string
	Client     *clientv3.Client
	Sessions   *session.Manager
	Slots      *slots.Semaphore
	Batch      *txnbatch.Committer // the worker's claims, releases and queue writes
	Exec       *target.Executor
	Engine     *jobs.Engine
	Elector    *election.Elector
	Membership *election.Membership
	Tracing    *tracing.Provider

	log     *slog.Logger
	config  func() *config.Config
	stages  stages
	base    *stage // session, slots view, membership
	work    *stage // the engine's worker, and what the caller adds (reloads)
	leading *stage // the elector and, while it leads, the engine's leader
}

// NodeOptions wire a Node.
type NodeOptions struct {
	Client  *clientv3.Client
	ID      string
	APIAddr string // advertised in the leader and member records
	Version string
	// Config is the current configuration; its cluster settings are read
	// once, at NewNode.
	Config     func() *config.Config
	ConfigHash string
	StartedAt  time.Time // of the process, in the member record; zero: now
	Logger     *slog.Logger
	Reg        prometheus.Registerer // nil registers nothing
	// Lookahead is the engine's (jobs.Options); zero covers a leader's
	// death at the configured session_ttl (jobs.LookaheadFor).
	Lookahead time.Duration
	// Supervised says that this binary's main calls target.Supervise
	// first (the scheduler's does, and etcdtest.Main in tests): exec runs
	// are then started under it as their supervisor. False: they are
	// started unsupervised, and the log says so.
	Supervised bool
}

// NewNode builds the stack; nothing runs until Start.
func NewNode(o NodeOptions) (*Node, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.StartedAt.IsZero() {
		o.StartedAt = time.Now()
	}
	cfg := o.Config()
	prefix := cfg.Cluster.Etcd.Prefix
	n := &Node{ID: o.ID, Client: o.Client, log: o.Logger, config: o.Config}
	err := n.newSessionParts(o, cfg)
	if err != nil {
		return nil, err
	}
	// The process's one tracer provider, from the OTEL_* variables (docs/design-edges.md#tracing); built before the executor so a bad setting leaks nothing.
	if n.Tracing, err = tracing.New(context.Background(), tracing.Options{Instance: o.ID, Version: o.Version}); err != nil {
		return nil, err
	}
	if o.Lookahead == 0 {
		// A dead leader's lease holds the election for up to session_ttl:
		// ticks materialized that far ahead keep runs starting meanwhile.
		o.Lookahead = jobs.LookaheadFor(cfg.Cluster.SessionTTL.D())
	}
	if n.Exec, err = newExecutor(o.Logger.With("component", "target"), o.Supervised); err != nil {
		_ = n.Tracing.Shutdown(StopSteps)
		return nil, err
	}
	n.Engine, err = jobs.New(jobs.Options{
		Client: o.Client, Prefix: prefix, ID: o.ID,
		Sessions: n.Sessions, Slots: n.Slots, Executor: n.Exec, Batch: n.Batch,
		Config: o.Config, Logger: o.Logger.With("component", "jobs"), Reg: o.Reg,
		Lookahead: o.Lookahead, TracerProvider: n.Tracing.TracerProvider(),
	})
	if err != nil {
		n.abort()
		return nil, err
	}
	if err := n.newElection(o, prefix); err != nil {
		n.abort()
		return nil, err
	}
	return n, nil
}

// newSessionParts makes the session manager and what claims on its
// sessions: the group committer and the slots.
func (n *Node) newSessionParts(o NodeOptions, cfg *config.Config) error {
	var err error
	n.Sessions, err = session.NewManager(o.Client, session.Options{
		TTL:    cfg.Cluster.SessionTTL.D(),
		Margin: cfg.Cluster.LeaseMargin.D(),
		Logger: o.Logger.With("component", "session"),
	}, o.Reg)
	if err != nil {
		return err
	}
	// One committer for the worker's per-run transactions: claims,
	// releases and queue writes that reach etcd together share a commit.
	if n.Batch, err = txnbatch.New(o.Client, txnbatch.Options{Reg: o.Reg}); err != nil {
		return err
	}
	teamOf := func(job string) string {
		if j := o.Config().Job(job); j != nil {
			return j.Team
		}
		return ""
	}
	jobNames := func() []string {
		cfg := o.Config()
		names := make([]string, len(cfg.Jobs))
		for i := range cfg.Jobs {
			names[i] = cfg.Jobs[i].Name
		}
		return names
	}
	// The engine is made after the slots, and before Start runs either.
	waiting := func() bool { return n.Engine != nil && n.Engine.Waiting() }
	n.Slots, err = slots.New(o.Client, keys.New(cfg.Cluster.Etcd.Prefix), o.Logger.With("component", "slots"), o.Reg,
		slots.WithCommitter(n.Batch), slots.WithTeams(teamOf), slots.WithJobs(jobNames), slots.WithDemand(waiting, slots.DefaultLinger))
	return err
}

// newElection makes the elector and this replica's member record.
func (n *Node) newElection(o NodeOptions, prefix string) error {
	var err error
	if n.Elector, err = election.New(o.Client, n.Sessions, election.Config{
		Prefix: prefix, ID: o.ID, APIAddr: o.APIAddr, Logger: o.Logger,
	}, o.Reg); err != nil {
		return err
	}
	n.Membership, err = election.NewMembership(o.Client, n.Sessions, prefix, election.Member{
		ID: o.ID, APIAddr: o.APIAddr, Version: o.Version, ConfigHash: o.ConfigHash, StartedAt: o.StartedAt,
		Protocol: assign.Protocol,
	}, o.Logger)
	return err
}

// Start runs the stack: the session, slots view and membership; the
// engine's worker; the elector, which runs the engine's leader while this
// replica leads.
func (n *Node) Start() {
	n.base = n.stages.add("base")
	n.work = n.stages.add("work")
	n.leading = n.stages.add("elect")
	n.base.serve("session", func(ctx context.Context) error { return n.Sessions.Run(ctx) })
	n.base.serve("slots", n.Slots.Run)
	n.base.serve("membership", n.Membership.Run)
	n.work.serve("engine", n.Engine.Run)
	n.leading.serve("election", func(ctx context.Context) error {
		return n.Elector.Run(ctx, func(ctx context.Context, l election.Leadership) {
			if err := n.Engine.Lead(ctx, l); err != nil {
				n.log.Error("leader work failed; giving up leadership", "err", err, "leader_rev", l.Rev)
			}
		})
	})
}

// StopClaiming stops the worker claiming runs (and what ServeWork runs);
// runs in flight go on.
func (n *Node) StopClaiming() { n.step("stop claiming", n.work) }

// StopLeading resigns, or stops campaigning, and waits for the leader's
// work to end.
func (n *Node) StopLeading() { n.step("resign", n.leading) }

// ServeWork runs f beside the worker, until the node stops claiming.
func (n *Node) ServeWork(name string, f func(context.Context) error) { n.work.serve(name, f) }

// Failed reports the first error of a part that ended on its own.
func (n *Node) Failed() <-chan error { return n.stages.errs }

// StopSteps bounds the steps of Stop other than the drain: each may wait
// on etcd, and an unreachable etcd must not hold a shutdown (docs/design-edges.md#operating-at-the-edges: a replica exits within shutdown_grace + 10s). What a step could not
// write is resolved later by rule 7.
const StopSteps = 2 * time.Second

// Stop shuts the stack down in the order of docs/design.md#start-and-stop-order: stop claiming
// and resign at once (a standby takes over in milliseconds), let runs
// finish within grace, cancel the rest and release their slots with
// records, then revoke the session, which deletes every key on its lease.
// Each step is bounded, so Stop returns within grace + 3 × StopSteps; a
// step cut short is cancelled and left to end by itself, or with the
// process (a call etcd does not answer may outlive Stop). It returns the
// errors the parts reported.
func (n *Node) Stop(grace time.Duration) error {
	// Both at once: the resign must not wait behind the worker, so a
	// standby takes over in milliseconds.
	var wg sync.WaitGroup
	for _, stop := range []func(){n.StopClaiming, n.StopLeading} {
		wg.Add(1)
		go func() { defer wg.Done(); stop() }()
	}
	wg.Wait()
	n.log.Info("shutdown: stopped claiming and resigned; draining runs", "grace", grace)
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	// After the grace the drain cancels the runs and waits for their
	// releases, each bounded by the TTL; give them one more step.
	if !waitWithin(func() { n.Engine.Drain(ctx) }, grace+StopSteps) {
		n.log.Warn("shutdown: runs not released in time; the leader records them lost", "after", grace+StopSteps)
	}
	// Beside the revoke, not after it, so the bound above holds: the spans
	// of the drained runs have ended, and both steps take StopSteps at most.
	var flushed sync.WaitGroup
	flushed.Go(n.flushTraces)
	// The worker is stopped and drained, so nothing commits through the
	// committer any more but a release the drain gave up on: cancelled
	// here, its outcome is unknown to it, and rule 7 resolves it.
	n.Batch.Close()
	n.step("revoke the session", n.base)
	n.Exec.Close()
	flushed.Wait()
	n.log.Info("shutdown: runs released, session revoked")
	return n.stages.wait()
}

func (n *Node) step(what string, st *stage) {
	if !st.stopWithin(StopSteps) {
		n.log.Warn("shutdown: step cut short; etcd is unreachable", "step", what, "after", StopSteps)
	}
}

// flushTraces exports the spans still buffered, bounded so an unreachable
// collector does not hold the shutdown.
func (n *Node) flushTraces() {
	if err := n.Tracing.Shutdown(StopSteps); err != nil {
		n.log.Warn("shutdown: spans not exported", "err", err)
	}
}

// abort releases what NewNode built before it failed.
func (n *Node) abort() {
	n.Exec.Close()
	_ = n.Tracing.Shutdown(StopSteps)
}
