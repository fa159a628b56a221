package worker

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/target"
)

// heldExecutor is a target that runs until the test lets it end: the
// worker's Executor interface, so the test decides when a run ends.
type heldExecutor struct {
	started chan target.Run
	release chan struct{}
}

func (h *heldExecutor) Execute(ctx context.Context, _ *config.Job, run target.Run) target.Result {
	h.started <- run
	select {
	case <-h.release:
		return target.Result{Outcome: runs.Succeeded}
	case <-ctx.Done():
		return target.Result{Outcome: runs.Cancelled, Error: context.Cause(ctx).Error()}
	}
}

// next is the next run h starts; the test fails with why if none starts
// within 30s (the time etcd may take to answer under load, not a
// schedule).
func (h *heldExecutor) next(t *testing.T, why string) target.Run {
	t.Helper()
	select {
	case run := <-h.started:
		return run
	case <-time.After(30 * time.Second):
		t.Fatal(why)
		return target.Run{}
	}
}

// The overlap and claim logic on a fake clock: claims, starts and skips
// happen when the clock says, not when the wall clock does. Real etcd
// decides every claim; nothing in the test waits on the wall clock but for
// etcd's answers.
//
// A job with max_concurrency 1 and overlap skip has runs due at t0+1s and
// t0+2s. The first is claimed and started when the clock reaches its due
// time, not before; it holds its slot, so the second is recorded skipped,
// naming the overlap, when the clock reaches its own due time; the first is
// recorded succeeded when it ends.
func TestOverlapOnAFakeClock(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(t0)
	job := jobstest.WithDefaults(jobstest.Job("one", "@every 1h"))
	job.MaxConcurrency, job.Overlap = 1, config.OverlapSkip
	exec := &heldExecutor{started: make(chan target.Run, 4), release: make(chan struct{})}
	tw := startTestWorker(t, "/fake-clock/", job, exec, testWorkerOptions{clock: clock})
	cli, layout, cfg, view, ctx := tw.cli, tw.layout, tw.cfg, tw.view, tw.ctx

	first, second := runs.ID("one", t0.Add(time.Second)), runs.ID("one", t0.Add(2*time.Second))
	for _, id := range []string{first, second} {
		at, _ := time.Parse(runs.TimeFormat, id[len("one@"):])
		e := queue.NewEntry(id, &cfg.Jobs[0], nil, at, at, 1, runs.Schedule)
		spec, _ := e.SpecOp(layout)
		if _, err := cli.Txn(ctx).Then(spec, clientv3.OpPut(layout.Entry("one", id), e.Encode())).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	poll.For(t, 30*time.Second, "the worker's view of both entries", func() bool {
		return view.Find(first) != nil && view.Find(second) != nil
	})

	// Until the clock moves nothing is claimed: both are due later.
	if got := len(tw.held(t)); got != 0 {
		t.Fatalf("%d slots held before any run was due", got)
	}
	clock.Advance(time.Second)
	run := exec.next(t, "the first run did not start when the clock reached its due time")
	if run.RunID != first || run.FencingToken == 0 {
		t.Fatalf("started %s with token %d, want %s with a token", run.RunID, run.FencingToken, first)
	}

	// The worker's view shows the first running before the clock moves
	// on: with the clock jumping a whole second, a view still showing it
	// pending would make it an elder a second late, whose turn the second
	// run waits for until the job's next tick (fair.go), an hour away here.
	poll.For(t, 30*time.Second, "the view of the first run as running", func() bool {
		q := view.Find(first)
		return q != nil && q.State == queue.Running
	})
	clock.Advance(time.Second)
	rec := waitRecord(t, cli, layout, second)
	if rec.Outcome != runs.Skipped || rec.Error == "" {
		t.Errorf("the second run: %s %q, want skipped naming the slot it found taken", rec.Outcome, rec.Error)
	}
	select {
	case r := <-exec.started:
		t.Fatalf("%s started while the first held the only slot", r.RunID)
	default:
	}

	close(exec.release)
	if rec := waitRecord(t, cli, layout, first); rec.Outcome != runs.Succeeded || rec.FencingToken != run.FencingToken {
		t.Errorf("the first run: %s with token %d, want succeeded with %d", rec.Outcome, rec.FencingToken, run.FencingToken)
	}
}

// waitRecord waits for the record of runID and returns it.
func waitRecord(t *testing.T, cli *clientv3.Client, layout keys.Layout, runID string) runs.Record {
	t.Helper()
	var rec runs.Record
	poll.For(t, 30*time.Second, "the record of "+runID, func() bool {
		resp, err := cli.Get(context.Background(), layout.Record(runs.JobOf(runID), runID))
		if err != nil || len(resp.Kvs) == 0 {
			return false
		}
		var err2 error
		rec, err2 = runs.DecodeRecord(resp.Kvs[0].Value)
		return err2 == nil
	})
	return rec
}

// jumpClock is a fake clock that moves on by jump right after the worker
// next reads it to arm its loop's timer (armUntil): a test's Advance
// landing between the reading of the time and the arming.
type jumpClock struct {
	*clockwork.FakeClock
	jump atomic.Int64 // nanoseconds; 0 once jumped
}

func (c *jumpClock) Now() time.Time {
	now := c.FakeClock.Now()
	if pc, _, _, ok := runtime.Caller(1); ok && strings.HasSuffix(runtime.FuncForPC(pc).Name(), ".(*Worker).armUntil") {
		if d := c.jump.Swap(0); d > 0 {
			c.FakeClock.Advance(time.Duration(d))
		}
	}
	return now
}

// A clock that reaches a run's due time while the loop arms its timer for
// it (the loop read the time before the jump, armed after) starts the run:
// the loop does not wait for the timer's own deadline, a whole jump later.
// TestOverlapOnAFakeClock met this under CI load: its Advance of one second
// came while the loop was arming its timer for the first run, which then
// waited for a second Advance that never came.
func TestAClockJumpWhileTheLoopArmsItsTimerStartsTheRun(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	clock := &jumpClock{FakeClock: clockwork.NewFakeClockAt(t0)}
	job := jobstest.WithDefaults(jobstest.Job("one", "@every 1h"))
	exec := &heldExecutor{started: make(chan target.Run, 4), release: make(chan struct{})}
	defer close(exec.release)
	tw := startTestWorker(t, "/clock-jump/", job, exec, testWorkerOptions{clock: clock})

	clock.jump.Store(int64(time.Second))
	id := runs.ID("one", t0.Add(time.Second))
	e := queue.NewEntry(id, &tw.cfg.Jobs[0], nil, t0.Add(time.Second), t0.Add(time.Second), 1, runs.Schedule)
	spec, _ := e.SpecOp(tw.layout)
	if _, err := tw.cli.Txn(tw.ctx).Then(spec, clientv3.OpPut(tw.layout.Entry("one", id), e.Encode())).Commit(); err != nil {
		t.Fatal(err)
	}
	run := exec.next(t, "the run did not start though the clock reached its due time")
	if run.RunID != id {
		t.Fatalf("started %s, want %s", run.RunID, id)
	}
	if clock.jump.Load() != 0 {
		t.Fatal("the loop never read the clock: the jump was not exercised")
	}
}
