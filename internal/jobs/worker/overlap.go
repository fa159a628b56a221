package worker

import (
	"context"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/tracing"
)

// What a run does while every slot it needs is taken: wait for a change,
// keep its place in the job's queue, replace the oldest run, or end
// unstarted with a record saying why.

// changes are the views' change channels as they were before a claim.
type changes struct{ slots, queue <-chan struct{} }

// waitChange waits for a slot or the queue to change, or until.
func (w *Worker) waitChange(ctx context.Context, c changes, until time.Time) {
	d := until.Sub(w.d.Clock.Now())
	if d <= 0 {
		d = time.Millisecond
	}
	t := w.d.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-c.slots:
	case <-c.queue:
	case <-t.Chan():
	}
}

// queuePosition is q's place among the job's runs that are due and waiting
// for a slot; the first queue_limit of them are kept.
func (w *Worker) queuePosition(q *queue.Item, now time.Time) int {
	waiting := w.d.Queue.List(func(o *queue.Item) bool {
		return o.Job == q.Job && o.State == queue.Pending && !o.NotBefore.After(now)
	})
	for i, o := range waiting {
		if o.Key == q.Key {
			return i
		}
	}
	return len(waiting)
}

// oldestRunning is the job's run that started first.
func (w *Worker) oldestRunning(job string) *queue.Item {
	var oldest *queue.Item
	for _, o := range w.d.Queue.List(func(o *queue.Item) bool { return o.Job == job && o.State == queue.Running }) {
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
