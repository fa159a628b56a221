// Package jobs is the dispatch engine of one replica, wired from its rooms:
// queue (entries and the views every replica keeps), leader (ticks, lost
// runs and history, fenced, while this replica leads) and worker (claims,
// overlap, execution and release). It also holds the operations and read
// models the API serves.
package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/trace"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/election"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/leader"
	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/jobs/outbox"
	"github.com/etcdsched/scheduler/internal/jobs/overdue"
	"github.com/etcdsched/scheduler/internal/jobs/pause"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/jobs/shed"
	"github.com/etcdsched/scheduler/internal/jobs/worker"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/tracing"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// Options wire an engine to its replica.
type Options struct {
	Client   *clientv3.Client
	Prefix   string
	ID       string // this replica: the holder of the runs it executes
	Sessions *session.Manager
	Slots    *slots.Semaphore
	Executor worker.Executor
	// Batch, when set, carries the worker's per-run queue writes beside
	// its claims and releases (queue.Writes.Batch); the API's go alone.
	Batch *txnbatch.Committer
	// Config returns the current configuration; ConfigChanged tells the
	// engine it changed.
	Config func() *config.Config
	Clock  clockwork.Clock
	Logger *slog.Logger
	Reg    prometheus.Registerer

	// Lookahead: ticks are materialized up to this long before they are
	// due, so a worker can claim and start the target on time, and runs
	// keep starting while a dead leader's lease holds the election
	// (LookaheadFor). Zero: leader.NearLookahead.
	Lookahead time.Duration
	// TracerProvider makes each run attempt's spans (docs/design-edges.md#tracing); nil
	// exports nothing but still gives targets a trace context.
	TracerProvider trace.TracerProvider
}

// LookaheadFor is the lookahead that covers a leader's death with sessions
// of ttl: runs keep starting on time until the next leader takes over
// (package leader, lookahead.go).
func LookaheadFor(ttl time.Duration) time.Duration { return leader.LookaheadFor(ttl) }

// Engine is the dispatch engine of one replica: leader work (Lead) while it
// leads, worker work (Run) always, and the operations the API asks for
// (control.go, backfill.go). The API's reads are its readers' (reads.go).
type Engine struct {
	opts    Options
	keys    keys.Layout
	clock   clockwork.Clock
	log     *slog.Logger
	metrics *metrics.Set
	writes  queue.Writes

	queue    *queue.View
	specs    *queue.Specs
	paused   *pause.View
	worker   *worker.Worker
	finished *leader.Finished
	outbox   *outbox.View
	overdue  *overdue.View   // jobs' overdue states and last successes
	workers  *leader.Workers // members/ as the leader assigns and resolves by
	assign   *assign.Store   // the lean protocol's transactions, the worker's and the leader's
	jobs     *jobReader      // the API's reads of jobs (status.go)
	runs     *runReader      // the API's reads of runs (runs.go)
	shed     *shed.Index     // chunk records by job, for a job's history (runspage.go)

	configChanged chan struct{}
	wg            sync.WaitGroup
	drained       chan struct{} // closed when Drain returns
}

// New checks the options.
func New(opts Options) (*Engine, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	m, err := metrics.New(opts.Reg)
	if err != nil {
		return nil, fmt.Errorf("jobs: metrics: %w", err)
	}
	layout := keys.New(opts.Prefix)
	specs := queue.NewSpecs(layout, opts.Client, opts.Logger)
	assigned, err := assign.New(opts.Client, layout, opts.Clock, assign.Options{Batch: opts.Batch})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	e := &Engine{
		drained:       make(chan struct{}),
		opts:          opts,
		keys:          layout,
		clock:         opts.Clock,
		log:           opts.Logger,
		metrics:       m,
		writes:        queue.Writes{Client: opts.Client, Keys: layout},
		queue:         queue.NewView(layout, opts.Logger, specs),
		specs:         specs,
		paused:        pause.NewView(layout, opts.Clock),
		finished:      leader.NewFinished(),
		outbox:        outbox.NewView(),
		overdue:       overdue.NewView(layout),
		workers:       leader.NewWorkers(layout),
		assign:        assigned,
		shed:          shed.NewIndex(layout, opts.Logger),
		configChanged: make(chan struct{}, 1),
	}
	e.runs = newRunReader(&opts, layout, e.queue, e.shed)
	lasts, err := overdue.NewLast(opts.Client, layout, e.overdue, opts.Clock)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	e.jobs = &jobReader{
		kv: opts.Client, keys: layout, config: opts.Config, clock: opts.Clock,
		queue: e.queue, paused: e.paused, outbox: e.outbox, slots: opts.Slots, runs: e.runs, late: e.overdue, lasts: lasts,
	}
	if err := e.registerGauges(); err != nil {
		return nil, err
	}
	if e.worker, err = e.newWorker(); err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	// A deleted queue entry is a finished run: count it for pruning.
	e.queue.Subscribe(nil, func(_ string, prev *queue.Item) {
		if prev != nil {
			e.finished.Note(prev.Job)
		}
	})
	return e, nil
}

// newWorker is the replica's worker, on the engine's views.
func (e *Engine) newWorker() (*worker.Worker, error) {
	o := &e.opts
	return worker.New(worker.Deps{
		Client: o.Client, Keys: e.keys, ID: o.ID,
		Sessions: o.Sessions, Slots: o.Slots, Executor: o.Executor, Batch: o.Batch,
		Queue: e.queue, Specs: e.specs, Paused: e.paused, Config: o.Config, Metrics: e.metrics, Clock: o.Clock, Log: o.Logger,
		Tracer: tracing.Tracer(o.TracerProvider),
		Assign: e.assign, Peers: e.workers,
	})
}

// registerGauges registers the gauges read from the engine's views and
// names each job's team for the metrics' labels.
func (e *Engine) registerGauges() error {
	if err := metrics.Pending(e.opts.Reg, e.outbox.Len); err != nil {
		return fmt.Errorf("jobs: metrics: %w", err)
	}
	e.metrics.SetTeams(func(job string) string {
		if j := e.opts.Config().Job(job); j != nil {
			return j.Team
		}
		return ""
	})
	if err := e.metrics.JobPaused(e.opts.Reg, e.jobs.pausedJobs); err != nil {
		return fmt.Errorf("jobs: metrics: %w", err)
	}
	if err := e.metrics.JobOverdue(e.opts.Reg, e.jobs.overdueJobs); err != nil {
		return fmt.Errorf("jobs: metrics: %w", err)
	}
	return nil
}

// ConfigChanged tells the leader loop to re-read the jobs. Signals coalesce.
func (e *Engine) ConfigChanged() {
	select {
	case e.configChanged <- struct{}{}:
	default:
	}
}

// Run mirrors the queue and job state and runs the worker until ctx ends:
// then it stops claiming and returns. Runs in flight go on; Drain ends them.
func (e *Engine) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	mirrorCtx, stopMirrors := context.WithCancel(context.WithoutCancel(ctx))
	for _, m := range []struct {
		prefix string
		h      mirror.Handler
	}{
		{e.keys.Specs(), e.specs},
		{e.keys.Queue(), e.queue},
		// One watch of jobs/ for both views: each put there (a cursor, a
		// pause) is an event once on this replica, not once a view. Last
		// successes are not there (overdue.Last).
		{e.keys.Jobs(), mirror.Tee(e.paused, e.overdue)},
		{e.keys.Cancels(), e.worker.Cancels()},
		// members/ once too: the worker's view (backups' turns) and the
		// leader's (whom it assigns to).
		{e.keys.Members(), mirror.Tee(e.worker.Members(), e.workers)},
		// assign/ once too: the worker's own assignments are its keys of
		// the watch its peers' view keeps (each of them an event once on
		// this replica, not twice; the peers' view skips them).
		{e.keys.Assignments(), mirror.Tee(
			mirror.Only(e.keys.ReplicaAssignments(e.opts.ID), e.worker.Assignments()),
			e.worker.PeerAssignments())},
		{e.keys.Claimed(), e.worker.PeerMarkers()},
		{e.keys.Outbox(), e.outbox},
		{e.keys.Shed(), e.shed},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = mirror.Run(mirrorCtx, e.opts.Client, m.prefix, m.h, e.log)
		}()
	}
	// The mirrors stay until Drain: running runs still need cancel
	// requests and releases need the queue view. Counted before the worker
	// runs: a shutdown whose "stop claiming" step was cut short calls
	// Drain while Run may still be in the worker, and an Add after Drain's
	// Wait began is a race (-race saw it under load).
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		<-e.worker.Drained()
		stopMirrors()
		wg.Wait()
	}()
	return e.worker.Run(ctx)
}

// Drain waits for runs in flight to finish until ctx ends, cancels the rest
// and waits for their releases. Call after Run returned.
func (e *Engine) Drain(ctx context.Context) {
	e.worker.Drain(ctx)
	e.wg.Wait()
	close(e.drained)
}

// Drained closes when Drain has returned: every goroutine of the engine
// has ended. A shutdown bounds its wait for the drain (replica.Node.Stop),
// and against an etcd out of reach the drain may outlive it.
func (e *Engine) Drained() <-chan struct{} { return e.drained }

// Ready closes once the queue and job state have been read.
func (e *Engine) Ready() <-chan struct{} { return e.queue.Ready() }

// Waiting says whether the queue view holds an entry: a run that waits, a
// trigger, a retry, a run of the queue path. The slots' view of job slots
// is kept while it does (slots.WithDemand).
func (e *Engine) Waiting() bool { return e.queue.Len() > 0 }

// Lead does the leader's work for one term while ctx lives (package
// leader). It returns nil when ctx ends or the term is found over.
func (e *Engine) Lead(ctx context.Context, term election.Leadership) error {
	return leader.Run(ctx, leader.Deps{
		Client: e.opts.Client, Keys: e.keys, Config: e.opts.Config, ConfigChanged: e.configChanged,
		Queue: e.queue, Specs: e.specs, Paused: e.paused, Slots: e.opts.Slots, Finished: e.finished, Chunks: e.shed, Outbox: e.outbox, Overdue: e.overdue, Last: e.jobs.lasts,
		Metrics: e.metrics, Clock: e.clock, Log: e.log, Lookahead: e.opts.Lookahead,
		Workers: e.workers, Assign: e.assign,
	}, term)
}
