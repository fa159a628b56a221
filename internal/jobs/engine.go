package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/target"
	"github.com/etcdsched/scheduler/internal/mirror"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
)

// Options wire an engine to its replica.
type Options struct {
	Client   *clientv3.Client
	Prefix   string
	ID       string // this replica: the holder of the runs it executes
	Sessions *session.Manager
	Slots    *slots.Semaphore
	Executor *target.Executor
	// Config returns the current configuration; ConfigChanged tells the
	// engine it changed.
	Config func() *config.Config
	Clock  clockwork.Clock
	Logger *slog.Logger
	Reg    prometheus.Registerer

	// Lookahead: ticks are materialized this long before they are due, so
	// a worker can claim and start the target on time.
	Lookahead time.Duration
	// ClaimLead: a worker claims this long before a run is due, so the
	// claim's round trip is not part of the run's lateness.
	ClaimLead time.Duration
	// Backup: a worker that is not the run's preferred worker waits this
	// long before competing for it, so one worker, not all, claims a run.
	Backup time.Duration
}

// Engine is the dispatch engine of one replica: leader work (Lead) while it
// leads, worker work (Run) always.
type Engine struct {
	opts    Options
	keys    Keys
	clock   clockwork.Clock
	log     *slog.Logger
	metrics *metrics

	queue    *queueView
	state    *jobState
	worker   *worker
	members  *memberSet
	finished *finishedJobs

	configChanged chan struct{}
	wg            sync.WaitGroup
}

// New checks the options.
func New(opts Options) (*Engine, error) {
	if opts.Client == nil || opts.Sessions == nil || opts.Slots == nil || opts.Executor == nil || opts.Config == nil {
		return nil, errors.New("jobs: client, sessions, slots, executor and config are required")
	}
	if opts.ID == "" {
		return nil, errors.New("jobs: replica id is required")
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Lookahead == 0 {
		opts.Lookahead = 2 * time.Second
	}
	if opts.ClaimLead == 0 {
		opts.ClaimLead = 25 * time.Millisecond
	}
	if opts.Backup == 0 {
		opts.Backup = 250 * time.Millisecond
	}
	m, err := newMetrics(opts.Reg)
	if err != nil {
		return nil, fmt.Errorf("jobs: metrics: %w", err)
	}
	keys := Keys{Prefix: opts.Prefix}
	e := &Engine{
		opts:          opts,
		keys:          keys,
		clock:         opts.Clock,
		log:           opts.Logger,
		metrics:       m,
		queue:         newQueueView(keys, opts.Logger),
		state:         newJobState(keys),
		members:       newMemberSet(opts.Prefix + "members/"),
		finished:      newFinishedJobs(),
		configChanged: make(chan struct{}, 1),
	}
	e.worker = newWorker(e)
	// A deleted queue entry is a finished run: count it for pruning.
	e.queue.subscribe(nil, func(_ string, prev *queued) {
		if prev != nil {
			e.noteFinished(prev.Job)
		}
	})
	return e, nil
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
		{e.keys.QueuePrefix(), e.queue},
		{e.keys.JobsPrefix(), e.state},
		{e.keys.CancelPrefix(), e.worker.cancels},
		{e.opts.Prefix + "members/", e.members},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = mirror.Run(mirrorCtx, e.opts.Client, m.prefix, m.h, e.log)
		}()
	}
	err := e.worker.run(ctx)
	// The mirrors stay until Drain: running runs still need cancel
	// requests and releases need the queue view.
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		<-e.worker.drained
		stopMirrors()
		wg.Wait()
	}()
	return err
}

// Drain waits for runs in flight to finish until ctx ends, cancels the rest
// and waits for their releases. Call after Run returned.
func (e *Engine) Drain(ctx context.Context) {
	e.worker.drain(ctx)
	e.wg.Wait()
}

// Ready closes once the queue and job state have been read.
func (e *Engine) Ready() <-chan struct{} { return e.queue.ready }
