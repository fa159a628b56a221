package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/mirror"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/target"
)

// roomSlots is a slots view with a fixed room in every limit; fair order
// asks it nothing else.
type roomSlots struct {
	Slots
	room int
}

func (s roomSlots) Free(slots.Kind, string, int) int     { return s.room }
func (s roomSlots) FreePlaces(slots.Rate, time.Time) int { return s.room }
func (s roomSlots) Claim(context.Context, *session.Session, slots.Request) (*slots.Held, error) {
	panic("not claimed here")
}

// aheadView is a queue view holding one job's pending ticks due at dues.
func aheadView(t *testing.T, layout keys.Layout, job *config.Job, dues ...time.Time) (*queue.View, []*queue.Item) {
	t.Helper()
	var kvs []*mvccpb.KeyValue
	for i, at := range dues {
		e := queue.NewEntry(runs.ID(job.Name, at), job, nil, at, at, 1, runs.Schedule)
		kvs = append(kvs, &mvccpb.KeyValue{Key: []byte(layout.Entry(job.Name, e.RunID)), Value: []byte(e.Encode()), ModRevision: int64(i + 1)})
	}
	v := queue.NewView(layout, nil)
	v.Reset(kvs, int64(len(kvs)))
	var items []*queue.Item
	for _, at := range dues {
		items = append(items, v.Find(runs.ID(job.Name, at)))
	}
	return v, items
}

// The leader queues ticks seconds ahead of their due time. Those are not
// waiting: they take no place in the job's queue (queue_limit) and are no
// elder a due run yields to.
func TestTicksQueuedAheadAreNotWaiting(t *testing.T) {
	layout := keys.New("/ahead/")
	job := jobstest.WithDefaults(jobstest.HTTPJob("a", "@every 100ms", "http://127.0.0.1:1/"))
	job.Overlap, job.QueueLimit = config.OverlapQueue, 1
	now := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	var dues []time.Time
	for i := range 70 { // 7s of ticks, as at session_ttl 5s
		dues = append(dues, now.Add(time.Duration(i)*100*time.Millisecond))
	}
	view, items := aheadView(t, layout, &job, dues...)

	w := &Worker{d: Deps{Queue: view, Slots: roomSlots{room: 1}}}
	if pos := w.queuePosition(items[0], now); pos != 0 {
		t.Errorf("the due run is at place %d of the job's queue, want 0: the 69 ticks ahead are not queued", pos)
	}
	if pos := w.queuePosition(items[1], now.Add(100*time.Millisecond)); pos != 1 {
		t.Errorf("the next tick, once due, is at place %d, want 1 (behind the first only)", pos)
	}
	if full, _ := w.yieldTo(items[0], now); full != nil {
		t.Errorf("the due run yields to %s, want no elder among the ticks ahead", full)
	}

	// The second tick, due, yields to the first still pending: the limit
	// has room, only its elder is to take it.
	full, free := w.yieldTo(items[1], now.Add(100*time.Millisecond))
	if full == nil || !free {
		t.Errorf("the second tick beside a pending first: yields to %v (free %v), want the job's slot, with room", full, free)
	}
	// With the slot taken, the same yield is to a full limit.
	w.d.Slots = roomSlots{room: 0}
	if _, free := w.yieldTo(items[1], now.Add(100*time.Millisecond)); free {
		t.Error("with the slot taken the limit is reported free")
	}

	// Runs due together (a burst of triggers) yield by the tie-break, but
	// none is late: the overlap policy decides among them as before.
	burst := queue.NewView(layout, nil)
	w = &Worker{d: Deps{Queue: burst, Slots: roomSlots{room: 1}}}
	e2 := queue.NewEntry(runs.ManualID("a", "02"), &job, nil, now, now, 1, runs.Manual)
	e1 := queue.NewEntry(runs.ManualID("a", "01"), &job, nil, now, now, 1, runs.Manual)
	burst.Reset([]*mvccpb.KeyValue{
		{Key: []byte(layout.Entry("a", e1.RunID)), Value: []byte(e1.Encode()), ModRevision: 1},
		{Key: []byte(layout.Entry("a", e2.RunID)), Value: []byte(e2.Encode()), ModRevision: 2},
	}, 2)
	yielded := 0
	for _, id := range []string{e1.RunID, e2.RunID} {
		full, free := w.yieldTo(burst.Find(id), now)
		if full != nil {
			yielded++
		}
		if free {
			t.Errorf("%s of a burst reports a late elder", id)
		}
	}
	if yielded != 1 {
		t.Errorf("%d runs of a burst of two yield, want the younger only", yielded)
	}
}

// A tick whose first-choice worker died is claimed late, by a backup, after
// the job's next tick came due. The next tick found the job's slot free at
// its due time and left it to its elder: it then takes its turn after the
// elder instead of being skipped for an overlap the backup's delay made
// (overlap: skip). Before, the failover benchmark's jobs @every 100ms lost
// the ticks after each late one that way.
func TestATickLeftToALateElderTakesItsTurn(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	layout := keys.New("/turn/")
	t0 := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(t0)
	job := jobstest.WithDefaults(jobstest.HTTPJob("one", "@every 100ms", "http://127.0.0.1:1/"))
	job.MaxConcurrency, job.Overlap = 1, config.OverlapSkip
	cfg := jobstest.Config(job)
	cfg.Cluster.Etcd.Prefix = layout.Prefix

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	goRun := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	sessions, err := session.NewManager(cli, session.Options{TTL: 5 * time.Second, Margin: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	goRun(func(ctx context.Context) { _ = sessions.Run(ctx) })
	sem, err := slots.New(cli, layout.Prefix, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	goRun(func(ctx context.Context) { _ = sem.Run(ctx) })
	view := queue.NewView(layout, nil)
	goRun(func(ctx context.Context) { _ = mirror.Run(ctx, cli, layout.Queue(), view, nil) })
	m, err := metrics.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	exec := &heldExecutor{started: make(chan target.Run, 4), release: make(chan struct{})}
	w := New(Deps{Client: cli, Keys: layout, ID: "w1", Sessions: sessions, Slots: sem, Executor: exec,
		Queue: view, Config: func() *config.Config { return cfg }, Metrics: m, Clock: clock})
	// w0 is listed but dead: the runs it comes first for wait a backup.
	w.Members().Reset([]*mvccpb.KeyValue{{Key: []byte(layout.Member("w0"))}, {Key: []byte(layout.Member("w1"))}}, 1)
	goRun(func(ctx context.Context) { _ = w.Run(ctx) })
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer dcancel()
		cancel()
		w.Drain(dctx)
	})
	poll.For(t, 30*time.Second, "a session", sessions.Alive)

	// Two consecutive ticks: w0 first for the elder, w1 for the next.
	var elder, next time.Time
	for at := t0.Add(time.Second); elder.IsZero(); at = at.Add(100 * time.Millisecond) {
		rank := func(at time.Time) int {
			return w.members.rank("w1", layout.Entry("one", runs.ID("one", at))+"#1")
		}
		if rank(at) == 1 && rank(at.Add(100*time.Millisecond)) == 0 {
			elder, next = at, at.Add(100*time.Millisecond)
		}
	}
	for _, at := range []time.Time{elder, next} {
		e := queue.NewEntry(runs.ID("one", at), &cfg.Jobs[0], nil, at, at, 1, runs.Schedule)
		if _, err := cli.Put(ctx, layout.Entry("one", e.RunID), e.Encode()); err != nil {
			t.Fatal(err)
		}
	}
	poll.For(t, 30*time.Second, "the worker's view of both entries", func() bool {
		return view.Find(runs.ID("one", elder)) != nil && view.Find(runs.ID("one", next)) != nil
	})

	nextKey := layout.Entry("one", runs.ID("one", next))
	parked := func(what string) {
		t.Helper()
		poll.For(t, 30*time.Second, what, func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			_, ok := w.parked[nextKey]
			return ok
		})
	}
	// The next tick comes due (its claim lead): its elder is still
	// pending, waiting for the dead worker, so it yields.
	clock.Advance(next.Sub(t0))
	parked("the next tick yielding to its elder")
	// The elder's backup: w1 claims it, 250ms after it was due.
	clock.Advance(elder.Add(300 * time.Millisecond).Sub(clock.Now()))
	var run target.Run
	select {
	case run = <-exec.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the backup did not claim the elder")
	}
	if run.RunID != runs.ID("one", elder) {
		t.Fatalf("started %s first, want the elder %s", run.RunID, runs.ID("one", elder))
	}
	// The next tick tries again at the claim and finds the slot taken: it
	// must wait, not be recorded skipped.
	clock.Advance(50 * time.Millisecond)
	parked("the next tick waiting for its turn")
	if resp, err := cli.Get(ctx, layout.Record("one", runs.ID("one", next))); err != nil || len(resp.Kvs) > 0 {
		t.Fatalf("the next tick was recorded (%v) while its elder ran: %s", err, resp.Kvs)
	}
	exec.release <- struct{}{}
	select {
	case run = <-exec.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the next tick did not start after its elder")
	}
	if run.RunID != runs.ID("one", next) {
		t.Errorf("started %s, want the next tick", run.RunID)
	}
	close(exec.release)
	if rec := waitRecord(t, cli, layout, runs.ID("one", next)); rec.Outcome != runs.Succeeded {
		t.Errorf("the next tick: %s %q, want succeeded", rec.Outcome, rec.Error)
	}
}
