package worker

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// G1: an assigned run that has a queue entry (its worker handed it to the
// queue path, and a leader's withdrawal of another job rewrote the
// assignment, which the worker took up again) is the queue path's: the
// assigned path records it not started only where it has no entry. A
// shed run beside it, with none, is recorded missed. Without the entry's
// compare the shed recorded it while its entry waited: two deciders.
func TestAnAssignedRunWithAQueueEntryIsNotRecordedBesideIt(t *testing.T) {
	every := func(name string) config.Job { return jobstest.Job(name, "@every 1s") }
	tw := startTestWorker(t, "/lean-queued/", every("queued"), &countingExecutor{started: make(chan string, 8)},
		testWorkerOptions{jobs: []config.Job{every("alone")}})
	at := time.Now().Truncate(time.Second).Add(-3 * time.Second).UTC()
	e := queue.NewEntry(runs.ID("queued", at), tw.cfg.Job("queued"), nil, at, time.Now().Add(time.Hour), 1, runs.Schedule)
	spec, _ := e.SpecOp(tw.layout)
	entry := tw.layout.Entry("queued", e.RunID)
	if _, err := tw.cli.Txn(context.Background()).Then(spec, clientv3.OpPut(entry, e.Encode())).Commit(); err != nil {
		t.Fatal(err)
	}
	tw.assignJobs(t, tw.incarnation(t), at, "queued", "alone")
	if rec := waitRecord(t, tw.cli, tw.layout, runs.ID("alone", at)); rec.Outcome != runs.Missed {
		t.Errorf("alone: recorded %s %q, want missed (shed)", rec.Outcome, rec.Error)
	}
	tw.waitSettled(t)
	if n := tw.count(t, tw.layout.Record("queued", e.RunID)); n != 0 {
		t.Errorf("queued: recorded by the assigned path while its queue entry waits")
	}
	if n := tw.count(t, entry); n != 1 {
		t.Errorf("queued: its entry is gone (%d), want it left to the queue path", n)
	}
}
