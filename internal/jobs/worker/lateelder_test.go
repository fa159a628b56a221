package worker

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/target"
)

// overlap: skip judges a tick at its instant. A run of the tick before
// that started after this tick was due (a backup took it over from a
// replica killed holding it, about 300 ms late, test/bench's failover
// step) overlapped nothing at this tick's instant: this tick waits for it
// and then runs. One that started before (it simply ran long) skips it, as
// ever. Both elders hold their job's only slot on a lease of the test's.
func TestASkipWaitsForAnElderThatStartedAfterItWasDue(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(t0)
	late, long := jobstest.WithDefaults(jobstest.Job("late", "@every 1h")), jobstest.WithDefaults(jobstest.Job("long", "@every 1h"))
	for _, j := range []*config.Job{&late, &long} {
		j.MaxConcurrency, j.Overlap = 1, config.OverlapSkip
	}
	exec := &heldExecutor{started: make(chan target.Run, 4), release: make(chan struct{})}
	tw := startTestWorker(t, "/late-elder/", late, exec, testWorkerOptions{clock: clock, jobs: []config.Job{long}})
	cli, layout, ctx := tw.cli, tw.layout, tw.ctx

	due := t0.Add(time.Second)
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	for job, started := range map[string]time.Time{"late": due.Add(300 * time.Millisecond), "long": t0} {
		v, _ := json.Marshal(slots.Value{RunID: runs.ID(job, t0), Holder: "r9", StartedAt: started, ScheduledAt: t0})
		if _, err := cli.Put(ctx, layout.Slot(job, 0), string(v), clientv3.WithLease(lease.ID)); err != nil {
			t.Fatal(err)
		}
	}
	poll.For(t, 30*time.Second, "the worker's view of both elders' slots", func() bool { return len(tw.sem.List()) == 2 })
	for i, job := range []string{"late", "long"} {
		e := queue.NewEntry(runs.ID(job, due), &tw.cfg.Jobs[i], nil, due, due, 1, runs.Schedule)
		spec, _ := e.SpecOp(layout)
		if _, err := cli.Txn(ctx).Then(spec, clientv3.OpPut(layout.Entry(job, e.RunID), e.Encode())).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	poll.For(t, 30*time.Second, "the worker's view of both runs", func() bool {
		return tw.view.Find(runs.ID("late", due)) != nil && tw.view.Find(runs.ID("long", due)) != nil
	})
	clock.Advance(time.Second + 500*time.Millisecond) // both due, both elders holding

	if rec := waitRecord(t, cli, layout, runs.ID("long", due)); rec.Outcome != runs.Skipped {
		t.Fatalf("the run behind an elder that ran long: %s %q, want skipped", rec.Outcome, rec.Error)
	}
	if resp, err := cli.Get(ctx, layout.Record("late", runs.ID("late", due))); err != nil || resp.Count != 0 {
		t.Fatalf("the run behind an elder that started after it was due has a record (%v): it was decided, not kept waiting", err)
	}
	if _, err := cli.Delete(ctx, layout.Slot("late", 0)); err != nil {
		t.Fatal(err)
	}
	if run := exec.next(t, "the run behind a late elder did not start once the elder ended"); run.RunID != runs.ID("late", due) {
		t.Fatalf("started %s, want %s", run.RunID, runs.ID("late", due))
	}
	close(exec.release)
	if rec := waitRecord(t, cli, layout, runs.ID("late", due)); rec.Outcome != runs.Succeeded {
		t.Errorf("the run behind a late elder: %s %q, want succeeded", rec.Outcome, rec.Error)
	}
}
