package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
)

// attempt tries to claim q and, holding its slot, runs it. When the slots
// are all taken, the job's overlap policy decides.
func (w *worker) attempt(ctx context.Context, q *queued) {
	e := w.e
	log := e.log.With("job", q.Job, "run_id", q.RunID, "attempt", q.Attempt)
	replaced := false
	for ctx.Err() == nil {
		sess, err := e.opts.Sessions.Current(ctx)
		if err != nil {
			return
		}
		now := e.clock.Now()
		deadline := q.NotBefore.Add(q.Spec.StartingDeadline.D())
		if now.After(deadline) {
			w.finishUnstarted(ctx, q, runs.Missed, "missed",
				fmt.Sprintf("not started by its starting deadline %s (due %s)", q.Spec.StartingDeadline, q.NotBefore.Format(runs.TimeFormat)))
			return
		}
		// Taken before the claim: a slot freed between a refusal and the
		// wait must wake the wait.
		changed := changes{slots: e.opts.Slots.Changed(), queue: e.queue.Changed()}
		held, running, err := w.claim(ctx, sess, q)
		switch {
		case err == nil:
			w.execute(q, running, held, log)
			return
		case errors.Is(err, slots.ErrConflict):
			e.metrics.claimFails.WithLabelValues("taken").Inc()
			return // claimed by another worker, cancelled, or changed
		case errors.Is(err, slots.ErrFull):
			e.metrics.claimFails.WithLabelValues("full").Inc()
		case ctx.Err() != nil:
			return
		case errors.Is(err, session.ErrGuardExpired), errors.Is(err, session.ErrLeaseGone), sess.Err() != nil:
			continue // wait for the next session
		default:
			log.Warn("claim failed; will try again", "err", err)
			w.retryLater(q, e.clock.Now().Add(time.Second))
			return
		}

		// Every slot is taken.
		switch {
		case now.Before(q.NotBefore):
			// Claimed early to start on time; a slot may yet free.
			w.waitChange(ctx, changed, q.NotBefore)
			continue
		case q.CatchUp && q.Spec.Overlap != config.OverlapReplace:
			// Caught-up ticks take turns, whatever the overlap policy.
			w.waitChange(ctx, changed, deadline)
		case q.Spec.Overlap == config.OverlapQueue:
			if pos := w.queuePosition(q, now); pos >= q.Spec.QueueLimit {
				w.finishUnstarted(ctx, q, runs.Skipped, "queue_full",
					fmt.Sprintf("all %d slots taken and %d runs already queued (queue_limit %d)", q.Spec.MaxConcurrency, pos, q.Spec.QueueLimit))
				return
			}
			w.waitChange(ctx, changed, deadline)
		case q.Spec.Overlap == config.OverlapReplace:
			if !replaced {
				if victim := w.oldestRunning(q.Job); victim != nil {
					if err := w.requestCancel(ctx, sess, victim.RunID, "replaced by "+q.RunID); err != nil {
						log.Warn("cannot cancel the run to replace", "victim", victim.RunID, "err", err)
					} else {
						log.Info("replacing the oldest running run", "victim", victim.RunID)
						replaced = true
					}
				}
			}
			w.waitChange(ctx, changed, deadline)
		default:
			w.finishUnstarted(ctx, q, runs.Skipped, "overlap",
				fmt.Sprintf("all %d slots taken (overlap: skip)", q.Spec.MaxConcurrency))
			return
		}
	}
}

// claim takes a slot for q and marks its entry running in one transaction
// (SPEC rule 3). The entry's new ModRevision is the slot's CreateRevision:
// the fencing token.
func (w *worker) claim(ctx context.Context, sess *session.Session, q *queued) (*slots.Held, *Entry, error) {
	e := w.e
	started := e.clock.Now()
	if started.Before(q.NotBefore) {
		started = q.NotBefore
	}
	running := *q.Entry
	running.State = Running
	running.Holder = e.opts.ID
	running.StartedAt = started.UTC()
	sent := e.clock.Now()
	held, err := e.opts.Slots.Claim(ctx, sess, slots.Request{
		Job:            q.Job,
		MaxConcurrency: q.Spec.MaxConcurrency,
		Resources:      q.slotResources(),
		Value:          slots.Value{RunID: q.RunID, Holder: e.opts.ID, StartedAt: running.StartedAt, ScheduledAt: q.ScheduledAt},
		If:             []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(q.Key), "=", q.ModRev)},
		ThenFor: func(slot int) []clientv3.Op {
			r := running
			r.Slot = slot
			return []clientv3.Op{clientv3.OpPut(q.Key, r.encode())}
		},
	})
	// Only answers of etcd count: a refusal by the view (ErrFull) takes
	// microseconds and would pull the average down when etcd is slowest.
	if err == nil || errors.Is(err, slots.ErrConflict) {
		w.claimRTT.observe(e.clock.Since(sent))
	}
	if err != nil {
		return nil, nil, err
	}
	running.Slot = held.Slot
	return held, &running, nil
}

// changes are the views' change channels as they were before a claim.
type changes struct{ slots, queue <-chan struct{} }

// waitChange waits for a slot or the queue to change, or until.
func (w *worker) waitChange(ctx context.Context, c changes, until time.Time) {
	d := until.Sub(w.e.clock.Now())
	if d <= 0 {
		d = time.Millisecond
	}
	t := w.e.clock.NewTimer(d)
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
func (w *worker) queuePosition(q *queued, now time.Time) int {
	waiting := w.e.queue.list(func(o *queued) bool {
		return o.Job == q.Job && o.State == Pending && !o.NotBefore.After(now)
	})
	for i, o := range waiting {
		if o.Key == q.Key {
			return i
		}
	}
	return len(waiting)
}

// oldestRunning is the job's run that started first.
func (w *worker) oldestRunning(job string) *queued {
	var oldest *queued
	for _, o := range w.e.queue.list(func(o *queued) bool { return o.Job == job && o.State == Running }) {
		if oldest == nil || o.StartedAt.Before(oldest.StartedAt) {
			oldest = o
		}
	}
	return oldest
}

// requestCancel asks the holder of runID to stop it. The request lives on
// this replica's session lease, so it cannot outlive the replica that made
// it by more than a TTL.
func (w *worker) requestCancel(ctx context.Context, sess *session.Session, runID, reason string) error {
	_, err := w.e.opts.Client.Put(ctx, w.e.keys.Cancel(runID), reason, clientv3.WithLease(sess.Lease()))
	return err
}

// finishUnstarted records a run that never started (skipped or missed) and
// removes its entry, if the entry is still as the view saw it.
func (w *worker) finishUnstarted(ctx context.Context, q *queued, outcome runs.Outcome, reason, msg string) {
	rec := q.record(outcome)
	rec.Slot = -1
	rec.EndedAt = w.e.clock.Now().UTC()
	rec.Error = msg
	ok, err := w.txnIfUnchanged(ctx, q,
		clientv3.OpDelete(q.Key),
		clientv3.OpPut(w.e.keys.Record(q.Job, q.RunID), encodeRecord(&rec)))
	if err != nil || !ok {
		return // another worker decided first, or etcd is away: the entry stays for another try
	}
	w.e.metrics.runs.WithLabelValues(q.Job, string(outcome)).Inc()
	w.e.metrics.skipped.WithLabelValues(q.Job, reason).Inc()
	w.e.log.Info("run not started", "job", q.Job, "run_id", q.RunID, "outcome", outcome, "reason", msg)
}
