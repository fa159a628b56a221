package worker

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
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
	var kvs, specKVs []*mvccpb.KeyValue
	for i, at := range dues {
		e := queue.NewEntry(runs.ID(job.Name, at), job, nil, at, at, 1, runs.Schedule)
		kvs = append(kvs, &mvccpb.KeyValue{Key: []byte(layout.Entry(job.Name, e.RunID)), Value: []byte(e.Encode()), ModRevision: int64(i + 1)})
		if op, ok := e.SpecOp(layout); ok && i == 0 {
			specKVs = append(specKVs, &mvccpb.KeyValue{Key: op.KeyBytes(), Value: op.ValueBytes()})
		}
	}
	specs := queue.NewSpecs(layout, nil, nil)
	specs.Reset(specKVs, 1)
	v := queue.NewView(layout, nil, specs)
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
	job := jobstest.WithDefaults(jobstest.Job("a", "@every 100ms"))
	job.Overlap, job.QueueLimit = config.OverlapQueue, 1
	now := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	var dues []time.Time
	for i := range 70 { // 7s of ticks, as at session_ttl 5s
		dues = append(dues, now.Add(time.Duration(i)*100*time.Millisecond))
	}
	view, items := aheadView(t, layout, &job, dues...)

	w := &fairOrder{d: Deps{Queue: view, Slots: roomSlots{room: 1}, ClaimLead: 25 * time.Millisecond}, rtt: &claimLatency{}}
	if pos := queuePosition(view, items[0], now); pos != 0 {
		t.Errorf("the due run is at place %d of the job's queue, want 0: the 69 ticks ahead are not queued", pos)
	}
	if pos := queuePosition(view, items[1], now.Add(100*time.Millisecond)); pos != 1 {
		t.Errorf("the next tick, once due, is at place %d, want 1 (behind the first only)", pos)
	}
	if el := w.yieldTo(items[0], now); el.full != nil || el.overdue != nil {
		t.Errorf("the due run yields to %v (overdue %v), want no elder among the ticks ahead", el.full, el.overdue)
	}

	// The second tick, due, yields to the first still pending: the limit
	// has room, only its elder is to take it.
	el := w.yieldTo(items[1], now.Add(100*time.Millisecond))
	if el.full == nil || !el.free {
		t.Errorf("the second tick beside a pending first: yields to %v (free %v), want the job's slot, with room", el.full, el.free)
	}
	// 100ms after it was due the first is overdue: its first worker
	// should have claimed it; the worker about to claim the second takes
	// it over.
	if el.overdue == nil || el.overdue.Key != items[0].Key {
		t.Errorf("the first tick, 100ms overdue, is not taken over (overdue %v)", el.overdue)
	}
	if el := w.yieldTo(items[1], now.Add(10*time.Millisecond)); el.overdue != nil || el.retry.IsZero() {
		t.Errorf("10ms after its due time the first tick is taken over (%v), or no look is planned (%v)", el.overdue, el.retry)
	}
	// With the slot taken, the same yield is to a full limit.
	w.d.Slots = roomSlots{room: 0}
	if el := w.yieldTo(items[1], now.Add(100*time.Millisecond)); el.free {
		t.Error("with the slot taken the limit is reported free")
	}

	// Runs due together (a burst of triggers) yield by the tie-break, but
	// none is late: the overlap policy decides among them as before.
	e2 := queue.NewEntry(runs.ManualID("a", "02"), &job, nil, now, now, 1, runs.Manual)
	e1 := queue.NewEntry(runs.ManualID("a", "01"), &job, nil, now, now, 1, runs.Manual)
	specs := queue.NewSpecs(layout, nil, nil)
	if op, ok := e1.SpecOp(layout); ok {
		specs.Reset([]*mvccpb.KeyValue{{Key: op.KeyBytes(), Value: op.ValueBytes()}}, 1)
	}
	burst := queue.NewView(layout, nil, specs)
	w = &fairOrder{d: Deps{Queue: burst, Slots: roomSlots{room: 1}}, rtt: &claimLatency{}}
	burst.Reset([]*mvccpb.KeyValue{
		{Key: []byte(layout.Entry("a", e1.RunID)), Value: []byte(e1.Encode()), ModRevision: 1},
		{Key: []byte(layout.Entry("a", e2.RunID)), Value: []byte(e2.Encode()), ModRevision: 2},
	}, 2)
	yielded := 0
	for _, id := range []string{e1.RunID, e2.RunID} {
		el := w.yieldTo(burst.Find(id), now)
		if el.full != nil {
			yielded++
		}
		if el.free {
			t.Errorf("%s of a burst reports a late elder", id)
		}
	}
	if yielded != 1 {
		t.Errorf("%d runs of a burst of two yield, want the younger only", yielded)
	}
}

// A tick whose first-choice worker died would be claimed by a backup only
// 250ms after it was due, after the job's next tick came due. The worker
// about to claim the next tick claims the overdue elder first; the next
// tick found the job's slot free at its due time and left it to that
// elder, so it takes its turn after it instead of being skipped for an
// overlap the dead worker made (overlap: skip). Before, the failover
// benchmark's jobs @every 100ms lost the ticks after each late one.
func TestALateElderIsTakenOverAndTheNextTickTakesItsTurn(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(t0)
	job := jobstest.WithDefaults(jobstest.Job("one", "@every 100ms"))
	job.MaxConcurrency, job.Overlap = 1, config.OverlapSkip
	tw, exec := startFakeClockWorker(t, "/turn/", job, clock)
	cli, layout, cfg, w, view := tw.cli, tw.layout, tw.cfg, tw.w, tw.view
	ctx := t.Context()

	// Two consecutive ticks: w0 first for the elder, w1 for the next.
	var elder, next time.Time
	for at := t0.Add(time.Second); elder.IsZero(); at = at.Add(100 * time.Millisecond) {
		rank := func(at time.Time) int {
			return w.members.rank("w1", layout.Entry("one", runs.ID("one", at))+"#1", t0)
		}
		if rank(at) == 1 && rank(at.Add(100*time.Millisecond)) == 0 {
			elder, next = at, at.Add(100*time.Millisecond)
		}
	}
	for _, at := range []time.Time{elder, next} {
		e := queue.NewEntry(runs.ID("one", at), &cfg.Jobs[0], nil, at, at, 1, runs.Schedule)
		putEntry(t, cli, layout, e)
	}
	poll.For(t, 30*time.Second, "the worker's view of both entries", func() bool {
		return view.Find(runs.ID("one", elder)) != nil && view.Find(runs.ID("one", next)) != nil
	})

	nextKey := layout.Entry("one", runs.ID("one", next))
	parked := func(what string) {
		t.Helper()
		poll.For(t, 30*time.Second, what, func() bool {
			w.queue.mu.Lock()
			defer w.queue.mu.Unlock()
			_, ok := w.queue.parked[nextKey]
			return ok
		})
	}
	// The next tick's claim time (25ms before it is due): its elder is
	// 75ms overdue, its first worker dead; w1 takes it over at once
	// instead of waiting for its backup turn at +250ms.
	clock.Advance(next.Add(-25 * time.Millisecond).Sub(t0))
	run := exec.next(t, "the overdue elder was not taken over")
	if run.RunID != runs.ID("one", elder) {
		t.Fatalf("started %s first, want the elder %s", run.RunID, runs.ID("one", elder))
	}
	// The next tick comes due with its elder still running: it must wait
	// its turn, not be recorded skipped.
	parked("the next tick waiting")
	clock.Advance(25 * time.Millisecond)
	// It looks again at its due time: it waits for its turn, until the
	// job's next tick is due (or, wrongly, it is recorded).
	recorded := func() bool {
		resp, err := cli.Get(ctx, layout.Record("one", runs.ID("one", next)))
		return err == nil && len(resp.Kvs) > 0
	}
	poll.For(t, 30*time.Second, "the next tick's look at its due time", func() bool {
		w.queue.mu.Lock()
		p, ok := w.queue.parked[nextKey]
		w.queue.mu.Unlock()
		return (ok && p.until.Equal(next.Add(100*time.Millisecond))) || recorded()
	})
	if recorded() {
		t.Fatal("the next tick was recorded while its elder ran")
	}
	exec.release <- struct{}{}
	run = exec.next(t, "the next tick did not start after its elder")
	if run.RunID != runs.ID("one", next) {
		t.Errorf("started %s, want the next tick", run.RunID)
	}
	close(exec.release)
	if rec := waitRecord(t, cli, layout, runs.ID("one", next)); rec.Outcome != runs.Succeeded {
		t.Errorf("the next tick: %s %q, want succeeded", rec.Outcome, rec.Error)
	}
}

// startFakeClockWorker runs worker w1 of job under prefix on clock
// (startTestWorker); its members are w0 (listed, dead) and itself.
func startFakeClockWorker(t *testing.T, prefix string, job config.Job, clock *clockwork.FakeClock) (*testWorker, *heldExecutor) {
	t.Helper()
	exec := &heldExecutor{started: make(chan target.Run, 4), release: make(chan struct{})}
	tw := startTestWorker(t, prefix, job, exec, testWorkerOptions{clock: clock})
	tw.w.Members().Reset([]*mvccpb.KeyValue{{Key: []byte(tw.layout.Member("w0"))}, {Key: []byte(tw.layout.Member("w1"))}}, 1)
	return tw, exec
}

// A worker ranks itself for a run when the run comes due, among the
// members live then, not when the leader queued it seconds before: a run
// whose first worker left meanwhile (a replica stopped, or dead and its
// lease expired) is claimed on time, not a backup's 250ms late.
func TestRankAtTheDueTime(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(t0)
	tw, exec := startFakeClockWorker(t, "/rank/", jobstest.Job("one", "@every 1h"), clock)
	cli, layout, cfg, w, view := tw.cli, tw.layout, tw.cfg, tw.w, tw.view
	// A run due in 7s whose first worker is w0.
	var at time.Time
	for c := t0.Add(7 * time.Second); at.IsZero(); c = c.Add(time.Second) {
		if w.members.rank("w1", layout.Entry("one", runs.ID("one", c))+"#1", t0) == 1 {
			at = c
		}
	}
	e := queue.NewEntry(runs.ID("one", at), &cfg.Jobs[0], nil, at, at, 1, runs.Schedule)
	putEntry(t, cli, layout, e)
	poll.For(t, 30*time.Second, "the worker's view of the run", func() bool { return view.Find(e.RunID) != nil })
	// w0 leaves before the run is due.
	w.Members().Reset([]*mvccpb.KeyValue{{Key: []byte(layout.Member("w1"))}}, 2)
	clock.Advance(at.Sub(t0))
	if run := exec.next(t, "the run did not start at its due time: w1 still waits for w0, which left"); run.RunID != e.RunID {
		t.Fatalf("started %s, want %s", run.RunID, e.RunID)
	}
	close(exec.release)
}
