package worker

import (
	"context"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/tracing"
)

// What a run does while a limit it needs is full: keep its place in the
// job's queue, replace the oldest run, or end unstarted with a record
// saying why.

// queuePosition is q's place among the job's runs (of its concurrency
// key: the limit holds per key, and so does the queue) that are due and
// waiting; the first queue_limit of them are kept.
func (w *Worker) queuePosition(q *queue.Item, now time.Time) int {
	waiting := w.d.Queue.List(func(o *queue.Item) bool {
		return o.Job == q.Job && o.ConcurrencyKey == q.ConcurrencyKey && o.State == queue.Pending && !o.NotBefore.After(now)
	})
	for i, o := range waiting {
		if o.Key == q.Key {
			return i
		}
	}
	return len(waiting)
}

// oldestRunning is the job's (or its key's) run that started first.
func (w *Worker) oldestRunning(job, key string) *queue.Item {
	var oldest *queue.Item
	for _, o := range w.d.Queue.List(func(o *queue.Item) bool {
		return o.Job == job && o.ConcurrencyKey == key && o.State == queue.Running
	}) {
		if oldest == nil || o.StartedAt.Before(oldest.StartedAt) {
			oldest = o
		}
	}
	return oldest
}

// finishUnstarted records a run that never started (skipped or missed) and
// removes its entry, if the entry is still as the view saw it.
func (w *Worker) finishUnstarted(ctx context.Context, q *queue.Item, outcome runs.Outcome, reason, msg string) {
	rec := q.NotStarted(outcome, w.d.Clock.Now(), msg)
	ok, err := w.writes.EndUnstarted(ctx, q, &rec)
	if err != nil || !ok {
		return // another worker decided first, or etcd is away: the entry stays for another try
	}
	tracing.Unstarted(ctx, outcome)
	w.d.Metrics.NotStarted(q.Job, string(outcome), reason)
	w.d.Log.Info("run not started", "job", q.Job, "run_id", q.RunID, "outcome", outcome, "reason", msg)
}
