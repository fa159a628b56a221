package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/tracing"
)

// start tries to claim q and, holding its slot, runs it. When the slots
// are all taken, the job's overlap policy decides.
func (w *Worker) start(ctx context.Context, q *queue.Item) {
	log := w.d.Log.With("job", q.Job, "run_id", q.RunID, "attempt", q.Attempt)
	ctx, span := tracing.StartRun(ctx, w.d.Tracer, tracing.RunInfo{Job: q.Job, RunID: q.RunID, Attempt: q.Attempt, Trigger: q.Trigger, Holder: w.d.ID})
	defer span.End()
	replaced := false
	for ctx.Err() == nil {
		sess, err := w.d.Sessions.Current(ctx)
		if err != nil {
			return
		}
		now := w.d.Clock.Now()
		deadline := q.NotBefore.Add(q.Spec.StartingDeadline.D())
		if now.After(deadline) {
			w.finishUnstarted(ctx, q, runs.Missed, "missed",
				fmt.Sprintf("not started by its starting deadline %s (due %s)", q.Spec.StartingDeadline, q.NotBefore.Format(runs.TimeFormat)))
			return
		}
		// Taken before the claim: a slot freed between a refusal and the
		// wait must wake the wait.
		changed := changes{slots: w.d.Slots.Changed(), queue: w.d.Queue.Changed()}
		claimCtx, claimSpan := span.Claim(ctx)
		held, running, err := w.claim(claimCtx, sess, q)
		claimSpan.End(held, err)
		switch {
		case err == nil:
			w.execute(q, running, held, log, span)
			return
		case errors.Is(err, slots.ErrConflict):
			w.d.Metrics.ClaimFails.WithLabelValues("taken").Inc()
			return // claimed by another worker, cancelled, or changed
		case errors.Is(err, slots.ErrFull):
			w.d.Metrics.ClaimFails.WithLabelValues("full").Inc()
		case ctx.Err() != nil:
			return
		case errors.Is(err, session.ErrGuardExpired), errors.Is(err, session.ErrLeaseGone), sess.Err() != nil:
			continue // wait for the next session
		default:
			log.Warn("claim failed; will try again", "err", err)
			w.retryLater(q, w.d.Clock.Now().Add(time.Second))
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
					if err := w.writes.RequestCancel(ctx, sess.Lease(), victim.RunID, "replaced by "+q.RunID); err != nil {
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
