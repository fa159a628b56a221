package worker

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/jobs/pause"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// testWorker is one worker on real etcd with its session, slots view and
// queue view, for tests that put entries themselves (no leader).
type testWorker struct {
	cli    *clientv3.Client
	layout keys.Layout
	cfg    *config.Config
	sem    *slots.Semaphore
	view   *queue.View
	sess   *session.Manager
	w      *Worker
	ctx    context.Context
	assign *assign.Store
	paused *pause.View
	// stopRun ends the worker's Run alone: it stops claiming, as a
	// graceful shutdown's first step does.
	stopRun context.CancelFunc
}

// testWorkerOptions: wrap, when set, stands between the worker and the
// real semaphore; writes, when set, makes the worker's own writes (records
// of unstarted runs, cancel requests) through a client of the test's; log
// receives the worker's log.
type testWorkerOptions struct {
	wrap   func(*slots.Semaphore) Slots
	writes func(endpoints []string) *clientv3.Client
	log    *slog.Logger
	// clock is the worker's clock; nil: the real one. sessionClock, when
	// set, is the session's.
	clock, sessionClock clockwork.Clock
	// jobs are configured besides the first; maxParallel, when set, is
	// worker.max_parallel.
	jobs        []config.Job
	maxParallel int
	// leastPlaces, when set, is the fewest places a cut leaves.
	leastPlaces int
	// peers, when set, lists the lean incarnations of the other replicas.
	peers LeanPeers
	// kv, when set, wraps the KV service the assignment store's group
	// commit sends through (its claims and cleanups).
	kv func(pb.KVClient) pb.KVClient
	// sinks are the config's notification sinks.
	sinks []config.Sink
}

// startTestWorker starts a worker for job under prefix.
func startTestWorker(t *testing.T, prefix string, job config.Job, exec Executor, o testWorkerOptions) *testWorker {
	t.Helper()
	clock := o.clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	etcd := etcdtest.Start(t)
	cli := etcd.Client()
	layout := keys.New(prefix)
	cfg := jobstest.Config(append([]config.Job{job}, o.jobs...)...)
	cfg.Cluster.Etcd.Prefix = layout.Prefix
	if o.maxParallel > 0 {
		cfg.Worker.MaxParallel = o.maxParallel
	}
	cfg.Notify.Sinks = o.sinks

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	goRun := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	sessions, err := session.NewManager(cli, session.Options{TTL: 5 * time.Second, Margin: time.Second, Clock: o.sessionClock}, nil)
	if err != nil {
		t.Fatal(err)
	}
	goRun(func(ctx context.Context) { _ = sessions.Run(ctx) })
	goRun(func(ctx context.Context) { member(ctx, cli, layout, sessions) })
	sem, err := slots.New(cli, layout, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	goRun(func(ctx context.Context) { _ = sem.Run(ctx) })
	specs := queue.NewSpecs(layout, cli, nil)
	view := queue.NewView(layout, nil, specs)
	goRun(func(ctx context.Context) { _ = mirror.Run(ctx, cli, layout.Queue(), view, nil) })
	m, err := metrics.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	var s Slots = sem
	if o.wrap != nil {
		s = o.wrap(sem)
	}
	writes := cli
	if o.writes != nil {
		writes = o.writes(etcd.Endpoints())
	}
	var batch *txnbatch.Committer
	if o.kv != nil {
		if batch, err = txnbatch.NewOn(o.kv(clientv3.RetryKVClient(writes)), writes, txnbatch.Options{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(batch.Close)
	}
	store, err := assign.New(writes, layout, clock, assign.Options{Batch: batch})
	if err != nil {
		t.Fatal(err)
	}
	paused := pause.NewView(layout, clock)
	goRun(func(ctx context.Context) { _ = mirror.Run(ctx, cli, layout.Jobs(), paused, nil) })
	w, err := New(Deps{Client: writes, Keys: layout, ID: "w1", Sessions: sessions, Slots: s, Executor: exec, Paused: paused,
		Queue: view, Specs: specs, Config: func() *config.Config { return cfg }, Metrics: m, Clock: clock, Log: o.log, Assign: store, Peers: o.peers})
	if err != nil {
		t.Fatal(err)
	}
	if o.leastPlaces > 0 {
		w.core.leastPlaces = o.leastPlaces // before it runs
	}
	goRun(func(ctx context.Context) {
		_ = mirror.Run(ctx, cli, layout.ReplicaAssignments("w1"), w.Assignments(), nil)
	})
	goRun(func(ctx context.Context) { _ = mirror.Run(ctx, cli, layout.Assignments(), w.PeerAssignments(), nil) })
	goRun(func(ctx context.Context) { _ = mirror.Run(ctx, cli, layout.Claimed(), w.PeerMarkers(), nil) })
	runCtx, stopRun := context.WithCancel(ctx)
	goRun(func(context.Context) { _ = w.Run(runCtx) })
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer dcancel()
		cancel()
		w.Drain(dctx)
	})
	poll.For(t, 30*time.Second, "a session", sessions.Alive)
	return &testWorker{cli: cli, layout: layout, cfg: cfg, sem: sem, view: view, sess: sessions, w: w, ctx: ctx, assign: store, paused: paused, stopRun: stopRun}
}

// startCounted starts a worker of the hourly jobs named (job), the first
// as its job and the others besides it, whose runs are counted.
func startCounted(t *testing.T, prefix string, o testWorkerOptions, names ...string) (*testWorker, *countingExecutor) {
	t.Helper()
	exec := &countingExecutor{started: make(chan string, 8)}
	for _, name := range names[1:] {
		o.jobs = append(o.jobs, job(name))
	}
	return startTestWorker(t, prefix, job(names[0]), exec, o), exec
}

// put writes e with its spec, as the leader does.
func (tw *testWorker) put(t *testing.T, e *queue.Entry) { putEntry(t, tw.cli, tw.layout, e) }

func putEntry(t *testing.T, cli *clientv3.Client, layout keys.Layout, e *queue.Entry) {
	t.Helper()
	ops := []clientv3.Op{clientv3.OpPut(layout.Entry(e.Job, e.RunID), e.Encode())}
	if spec, ok := e.SpecOp(layout); ok {
		ops = append(ops, spec)
	}
	if _, err := cli.Txn(context.Background()).Then(ops...).Commit(); err != nil {
		t.Fatal(err)
	}
}

// member keeps w1's member key on its current session's lease, as the
// replica's membership does: a worker marks a chunk started only while it
// is a member (assign.Claimer.StartChunk).
func member(ctx context.Context, cli *clientv3.Client, layout keys.Layout, sessions *session.Manager) {
	for {
		s, err := sessions.Current(ctx)
		if err != nil {
			return
		}
		var retry <-chan time.Time
		if _, err := cli.Put(ctx, layout.Member("w1"), "{}", clientv3.WithLease(s.Lease())); err != nil {
			retry = time.After(100 * time.Millisecond) // a put cut by a fault: again
		}
		select {
		case <-ctx.Done():
			return
		case <-s.Done():
		case <-retry:
		}
	}
}

// held is the slots tw's semaphore reads from etcd.
func (tw *testWorker) held(t *testing.T) []slots.Info {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	list, err := tw.sem.Held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// running is how many slots job holds in etcd.
func (tw *testWorker) running(t *testing.T, job string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	n, err := tw.sem.Running(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	return n[job]
}
