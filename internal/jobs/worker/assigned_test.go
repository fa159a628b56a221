package worker

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/pause"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/target"
)

// incarnation is the worker's name in assignments on its current session.
func (tw *testWorker) incarnation(t *testing.T) string {
	t.Helper()
	sess, err := tw.sess.Current(tw.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return keys.Incarnation("w1", int64(sess.Lease()))
}

// assignJobs writes, as the leader does, the specs of jobs and one
// assignment of their ticks at at to worker.
func (tw *testWorker) assignJobs(t *testing.T, worker string, at time.Time, jobs ...string) assign.Assignment {
	t.Helper()
	a := assign.Assignment{Worker: worker, At: at, Group: jobs[0]}
	ops := []clientv3.Op{}
	for _, name := range jobs {
		e := queue.NewEntry(runs.ID(name, at), tw.cfg.Job(name), nil, at, at, 1, runs.Schedule)
		spec, _ := e.SpecOp(tw.layout)
		ops = append(ops, spec)
		a.Jobs = append(a.Jobs, assign.Job{Name: name, SpecRef: e.SpecRef})
	}
	ops = append(ops, clientv3.OpPut(a.Key(tw.layout), a.Encode()))
	if _, err := tw.cli.Txn(context.Background()).Then(ops...).Commit(); err != nil {
		t.Fatal(err)
	}
	return a
}

// count is how many keys are under prefix.
func (tw *testWorker) count(t *testing.T, prefix string) int64 {
	t.Helper()
	resp, err := tw.cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// waitSettled waits until the assignments and claim markers are gone.
func (tw *testWorker) waitSettled(t *testing.T) {
	t.Helper()
	poll.For(t, 30*time.Second, "the assignments and their claim markers deleted", func() bool {
		return tw.count(t, tw.layout.Assignments()) == 0 && tw.count(t, tw.layout.Claimed()) == 0
	})
}

type countingExecutor struct {
	started chan string
	runs    atomic.Int32
}

func (c *countingExecutor) Execute(_ context.Context, _ *config.Job, run target.Run) target.Result {
	c.runs.Add(1)
	c.started <- run.RunID
	return target.Result{Outcome: runs.Succeeded}
}

// job is an hourly job that does not tick while a test runs: its ticks
// fall half an hour from now (jobstest.FarTick). An @every 1h job ticks on
// whole hours, and a test run across one had its run taken up seconds
// late recorded missed, superseded by the tick at the hour (CI at 16:00
// and a race run at 15:00 on 2026-11-30).
func job(name string) config.Job { return jobstest.Job(name, jobstest.FarTick(time.Now())) }

// An assignment of this incarnation runs each of its jobs once, through
// no queue entry, and is deleted with its claim markers once every run has
// its record.
func TestAnAssignmentRunsEachJobOnceAndIsDeleted(t *testing.T) {
	tw, exec := startCounted(t, "/lean-a/", testWorkerOptions{}, "a", "b", "c")
	at := time.Now().Add(300 * time.Millisecond).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "a", "b", "c")
	for _, name := range []string{"a", "b", "c"} {
		if rec := waitRecord(t, tw.cli, tw.layout, runs.ID(name, at)); rec.Outcome != runs.Succeeded {
			t.Errorf("%s: recorded %s %q, want succeeded", name, rec.Outcome, rec.Error)
		}
	}
	tw.waitSettled(t)
	if n := exec.runs.Load(); n != 3 {
		t.Errorf("%d runs executed, want 3", n)
	}
	if n := tw.count(t, tw.layout.Queue()); n != 0 {
		t.Errorf("%d queue entries left, want none", n)
	}
	if n := tw.count(t, tw.layout.Slots()); n != 0 {
		t.Errorf("%d slot keys left, want none", n)
	}
}

// A replica claims only from its current incarnation's assignments: one
// of an earlier session is the leader's to resolve (its runs may have
// started there).
func TestAnAssignmentOfAnotherIncarnationIsNotClaimed(t *testing.T) {
	tw, exec := startCounted(t, "/lean-b/", testWorkerOptions{}, "old", "new")
	now := time.Now().UTC()
	sess, err := tw.sess.Current(tw.ctx)
	if err != nil {
		t.Fatal(err)
	}
	earlier := keys.Incarnation("w1", int64(sess.Lease())+1)
	tw.assignJobs(t, earlier, now.Add(100*time.Millisecond), "old")
	tw.assignJobs(t, tw.incarnation(t), now.Add(400*time.Millisecond), "new")
	waitRecord(t, tw.cli, tw.layout, runs.ID("new", now.Add(400*time.Millisecond)))
	old := runs.ID("old", now.Add(100*time.Millisecond))
	if resp, err := tw.cli.Get(context.Background(), tw.layout.Record("old", old)); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("the earlier incarnation's run was recorded (%v)", err)
	}
	if n := tw.count(t, tw.layout.WorkerClaimed(earlier)); n != 0 {
		t.Errorf("%d claim markers of the earlier incarnation, want none", n)
	}
	if n := tw.count(t, tw.layout.WorkerAssignments(earlier)); n != 1 {
		t.Errorf("the earlier incarnation's assignment: %d keys, want it left for the leader", n)
	}
	if n := exec.runs.Load(); n != 1 {
		t.Errorf("%d runs executed, want 1", n)
	}
}

// With overlap queue, the refused run waits in the job's queue and runs
// once the slot frees.
func TestARefusedAssignedRunWaitsInTheQueue(t *testing.T) {
	exec := &countingExecutor{started: make(chan string, 8)}
	j := job("wait")
	j.Overlap = config.OverlapQueue
	tw := startTestWorker(t, "/lean-q/", j, exec, testWorkerOptions{})
	other := tw.holdSlot(t, "wait", "wait@earlier")
	at := time.Now().Add(300 * time.Millisecond).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "wait")
	id := runs.ID("wait", at)
	poll.For(t, 30*time.Second, "the refused run queued", func() bool { return tw.view.Find(id) != nil })
	tw.waitSettled(t)
	if _, err := tw.cli.Revoke(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	if rec := waitRecord(t, tw.cli, tw.layout, id); rec.Outcome != runs.Succeeded {
		t.Errorf("recorded %s %q, want succeeded once the slot freed", rec.Outcome, rec.Error)
	}
	if n := exec.runs.Load(); n != 1 {
		t.Errorf("%d runs executed, want 1", n)
	}
}

// A run whose starting deadline passed before it could be claimed is
// recorded missed, not run late.
func TestAnAssignedRunPastItsStartingDeadlineIsMissed(t *testing.T) {
	exec := &countingExecutor{started: make(chan string, 8)}
	j := job("late")
	j.StartingDeadline = config.Duration(time.Second)
	tw := startTestWorker(t, "/lean-d/", j, exec, testWorkerOptions{})
	at := time.Now().Add(-time.Minute).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "late")
	rec := waitRecord(t, tw.cli, tw.layout, runs.ID("late", at))
	if rec.Outcome != runs.Missed {
		t.Errorf("recorded %s %q, want missed", rec.Outcome, rec.Error)
	}
	tw.waitSettled(t)
	if n := exec.runs.Load(); n != 0 {
		t.Errorf("%d runs executed, want none", n)
	}
}

// An assigned run's release writes nothing once its incarnation's lease is
// gone, which is when the leader may record the run lost (its member key
// leaves the lease only then, election.Membership.Run): the release,
// owner-checked, finds its slot gone and compares no record.
func TestAnAssignedRunsReleaseWritesNothingOnceItsLeaseIsGone(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&lockedWriter{mu: &mu, w: &buf}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	exec := &heldExecutor{started: make(chan target.Run, 4), release: make(chan struct{})}
	tw := startTestWorker(t, "/lean-e/", job("gone"), exec, testWorkerOptions{log: log})
	sess, err := tw.sess.Current(tw.ctx)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(300 * time.Millisecond).UTC()
	tw.assignJobs(t, keys.Incarnation("w1", int64(sess.Lease())), at, "gone")
	run := started(t, exec)
	if _, err := tw.cli.Revoke(context.Background(), sess.Lease()); err != nil {
		t.Fatal(err)
	}
	e := queue.NewEntry(run.RunID, tw.cfg.Job("gone"), nil, at, at, 1, runs.Schedule)
	lost := e.Lost(run.FencingToken, time.Now())
	put, err := tw.cli.Put(context.Background(), tw.layout.Record("gone", run.RunID), runs.EncodeRecord(&lost))
	if err != nil {
		t.Fatal(err)
	}
	close(exec.release)
	poll.For(t, 30*time.Second, "the worker to find its slot gone at the release", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(buf.String(), `"msg":"slot lost before release`)
	})
	resp, err := tw.cli.Get(context.Background(), tw.layout.Record("gone", run.RunID))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].ModRevision != put.Header.Revision {
		t.Errorf("the record was written again after the leader's: %v", resp.Kvs)
	}
}

// started is the next run exec starts, within a generous deadline.
func started(t *testing.T, exec *heldExecutor) target.Run {
	t.Helper()
	return exec.next(t, "no run started within 30s")
}

// max_parallel bounds the assigned runs running at once, as it bounds
// queued ones.
func TestMaxParallelBoundsAssignedRuns(t *testing.T) {
	exec := &heldExecutor{started: make(chan target.Run, 8), release: make(chan struct{})}
	tw := startTestWorker(t, "/lean-f/", job("p1"), exec,
		testWorkerOptions{jobs: []config.Job{job("p2"), job("p3")}, maxParallel: 2})
	at := time.Now().Add(300 * time.Millisecond).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "p1", "p2", "p3")
	started(t, exec)
	started(t, exec)
	poll.For(t, 30*time.Second, "two slots held", func() bool { return len(tw.held(t)) == 2 })
	select {
	case r := <-exec.started:
		t.Fatalf("%s started beside two runs with max_parallel 2", r.RunID)
	default:
	}
	if n := len(tw.held(t)); n != 2 {
		t.Fatalf("%d slots held with max_parallel 2", n)
	}
	exec.release <- struct{}{}
	started(t, exec)
	close(exec.release)
	for _, name := range []string{"p1", "p2", "p3"} {
		waitRecord(t, tw.cli, tw.layout, runs.ID(name, at))
	}
	tw.waitSettled(t)
}

// A paused job's assigned tick is recorded skipped, not run (as a queued
// one is, start.go).
func TestAnAssignedRunOfAPausedJobIsSkipped(t *testing.T) {
	tw, exec := startCounted(t, "/lean-p/", testWorkerOptions{}, "held")
	if _, err := tw.cli.Put(context.Background(), tw.layout.Paused("held"), pause.Encode(pause.Marker{Paused: true})); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, "the pause seen", func() bool { return tw.paused.Is("held", false) })
	at := time.Now().Add(300 * time.Millisecond).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "held")
	if rec := waitRecord(t, tw.cli, tw.layout, runs.ID("held", at)); rec.Outcome != runs.Skipped {
		t.Errorf("recorded %s %q, want skipped", rec.Outcome, rec.Error)
	}
	tw.waitSettled(t)
	if n := exec.runs.Load(); n != 0 {
		t.Errorf("%d runs executed, want none", n)
	}
}

type failOnceExecutor struct{ attempts chan int }

func (f failOnceExecutor) Execute(_ context.Context, _ *config.Job, run target.Run) target.Result {
	f.attempts <- run.Attempt
	if run.Attempt == 1 {
		return target.Result{Outcome: runs.Failed, Error: "first attempt fails"}
	}
	return target.Result{Outcome: runs.Succeeded}
}

// A failed assigned run's retry takes the queue path (an entry under its
// run id, put by the release) and its final record carries both attempts.
func TestAFailedAssignedRunIsRetriedThroughTheQueue(t *testing.T) {
	exec := failOnceExecutor{attempts: make(chan int, 4)}
	j := job("flaky")
	j.Retries.Max = 1
	j.Retries.Backoff = config.Duration(10 * time.Millisecond)
	j.Retries.MaxBackoff = config.Duration(10 * time.Millisecond)
	tw := startTestWorker(t, "/lean-r/", j, exec, testWorkerOptions{})
	at := time.Now().Add(300 * time.Millisecond).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "flaky")
	id := runs.ID("flaky", at)
	// The failed attempt's record is written with its retry entry; the
	// final attempt's replaces it.
	var rec runs.Record
	poll.For(t, 30*time.Second, "the final record of "+id, func() bool {
		rec = waitRecord(t, tw.cli, tw.layout, id)
		return rec.Outcome != runs.Failed
	})
	if rec.Outcome != runs.Succeeded || rec.Attempt != 2 || len(rec.Previous) != 1 {
		t.Errorf("recorded %s at attempt %d with %d previous, want succeeded at 2 after 1", rec.Outcome, rec.Attempt, len(rec.Previous))
	}
	tw.waitSettled(t)
	if n := tw.count(t, tw.layout.Queue()); n != 0 {
		t.Errorf("%d queue entries left, want none", n)
	}
}

// revision is etcd's current revision.
func (tw *testWorker) revision(t *testing.T) int64 {
	t.Helper()
	resp, err := tw.cli.Get(context.Background(), "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

// existedBetween reports whether key existed at any revision from from
// to to, read from etcd's history one revision at a time.
func (tw *testWorker) existedBetween(t *testing.T, key string, from, to int64) bool {
	t.Helper()
	for rev := from; rev <= to; rev++ {
		resp, err := tw.cli.Get(context.Background(), key, clientv3.WithRev(rev), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count > 0 {
			return true
		}
	}
	return false
}
