package worker

import (
	"context"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/follow"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/tracing"
)

// What a run does while a limit it needs is full: keep its place in the
// job's queue, replace the oldest run, or end unstarted with a record
// saying why.

// queuePosition is q's place in view among the job's runs (of its concurrency
// key: the limit holds per key, and so does the queue) that are due and
// waiting; the first queue_limit of them are kept.
func queuePosition(view *queue.View, q *queue.Item, now time.Time) int {
	waiting := view.ListJob(q.Job, func(o *queue.Item) bool {
		return o.ConcurrencyKey == q.ConcurrencyKey && o.State == queue.Pending && !o.NotBefore.After(now)
	})
	for i, o := range waiting {
		if o.Key == q.Key {
			return i
		}
	}
	return len(waiting)
}

// oldestRunning is the job's (or its key's) run in view that started
// first.
func oldestRunning(view *queue.View, job, key string) *queue.Item {
	var oldest *queue.Item
	for _, o := range view.ListJob(job, func(o *queue.Item) bool {
		return o.ConcurrencyKey == key && o.State == queue.Running
	}) {
		if oldest == nil || o.StartedAt.Before(oldest.StartedAt) {
			oldest = o
		}
	}
	return oldest
}

// finishUnstarted records a run that never started (skipped or missed) and
// removes its entry, if the entry is still as the view saw it. It returns
// when to try again: the zero time when the run is settled (recorded here,
// or another worker decided first, whose change the view brings), or a
// moment soon when etcd did not answer. The caller must then park the run:
// nothing else would bring it back, and a pending entry nobody tries again
// stays due for ever, every later run of its key queued behind it (a keyed
// job stalled that way after an etcd leader was killed while a skip was
// being written).
func (qr *queueRunner) finishUnstarted(ctx context.Context, q *queue.Item, st *waitState, outcome runs.Outcome, reason, msg string) time.Time {
	rec := q.NotStarted(outcome, qr.d.Clock.Now(), msg)
	// Bounded: a worker waiting on an unreachable etcd holds one of
	// max_parallel.
	wctx, cancel := context.WithTimeout(ctx, qr.d.Config().Cluster.SessionTTL.D())
	ok, err := qr.writes.IfUnchanged(wctx, q, follow.Unstarted(qr.d.Keys, qr.d.Config(), q, &rec)...)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return time.Time{} // stopping: the next worker to see the entry decides
		}
		at := st.failed(qr.d.Clock.Now())
		qr.d.Log.Warn("recording the run as not started failed; will try again", "job", q.Job, "run_id", q.RunID, "outcome", outcome, "err", err, "at", at)
		return at
	}
	if !ok {
		return time.Time{} // another worker decided first
	}
	tracing.Unstarted(ctx, outcome)
	qr.d.Metrics.NotStarted(q.Job, string(outcome), reason)
	qr.d.Log.Info("run not started", "job", q.Job, "run_id", q.RunID, "outcome", outcome, "reason", msg)
	return time.Time{}
}
