package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/follow"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/target"
	"github.com/etcdsched/scheduler/internal/tracing"
)

// execute runs a claimed entry at its due time and releases its slot with
// the record. The run's context ends when the slot can no longer be trusted
// (the session guard, docs/design.md#the-safety-rules, rule 5), on a cancel request, or when the
// shutdown grace is over; never merely because the worker stops claiming.
//
// It returns the error of the run's end (nil once applied). A run with no
// entry (q.Key "", an assigned run) is never rate-limited nor keeps its
// slot (admission.Of): nothing to give back to or keep in. log names the
// run and its slot (runLog).
func (c *core) execute(q *queue.Item, entry *queue.Entry, held *slots.Held, log *slog.Logger, span *tracing.Run) error {
	runCtx, cancel := context.WithCancelCause(held.Context())
	defer cancel(nil)
	c.setCancel(q.RunID, cancel)
	c.untilStart(runCtx, cancel, entry, held)
	if cause := context.Cause(runCtx); runCtx.Err() != nil && untrusted(cause) && q.Entry.Hold == nil {
		return c.handBackUnstarted(q, held, cause, log)
	}
	startedAt := c.d.Clock.Now()
	if _, rates := limits(entry); len(rates) > 0 && q.Key != "" && runCtx.Err() == nil && startedAt.Sub(entry.StartedAt) > slots.MaxStartLatency {
		return c.giveBack(q, held, entry.StartedAt, log)
	}
	res := c.runTarget(runCtx, entry, held, log, span, startedAt)
	endedAt := c.d.Clock.Now()
	res.Outcome = outcomeOf(res.Outcome, context.Cause(runCtx), entry.Spec.OnShutdown)

	rec := entry.Finished(res.Outcome, held.Slot, held.Token, startedAt, endedAt)
	res.Fill(&rec)
	if res.Outcome == runs.Interrupted {
		rec.Error = interruptedWhy(entry, c.d.Config().Worker.MaxInterruptions)
	}
	k := c.endKeys()
	ops, retry := follow.End(k, c.d.Config(), q.Key, entry, &rec, endedAt)
	var success *clientv3.Op // the last success, put later (successes.go)
	if rec.Outcome == runs.Succeeded && !k.SuccessInJobs && entry.Spec.OverdueAfter == 0 {
		ops, success = c.successes.take(entry.Job, k.LastSuccess(entry.Job), ops, endedAt)
	}

	// Release even though the run's context may be over, until etcd
	// answers it or the session ends (settle.go).
	err := c.settle(held, log, func(ctx context.Context) error {
		return c.keepOrRelease(ctx, q, entry, held, res.Outcome, retry, ops)
	})
	if err == nil && success != nil {
		c.successes.wait(entry.Job, success, held.Released())
	}
	span.Finish(res.Outcome, res.Error, err)
	c.d.Metrics.Duration.WithLabelValues(entry.Job).Observe(endedAt.Sub(startedAt).Seconds())
	if err != nil {
		logUnreleased(log, err, res.Outcome)
		return err
	}
	c.d.Metrics.Runs.WithLabelValues(entry.Job, string(res.Outcome)).Inc()
	attrs := []any{"outcome", res.Outcome, "duration", endedAt.Sub(startedAt), "retry", retry != nil}
	if rec.Error != "" {
		attrs = append(attrs, "error", rec.Error)
	}
	log.Info("run finished", attrs...)
	return nil
}

// runLog is the logger of a run holding its slots: log with attrs (what
// names the run, when log does not yet) and the slot and its token. The
// lean path names all five in one With (one handler a run instead of two:
// 1 % of a replica at a burst).
func runLog(log *slog.Logger, held *slots.Held, attrs ...any) *slog.Logger {
	return log.With(append(attrs, "slot", held.Slot, "token", held.Token)...)
}

// endKeys is the key layout a run's end writes by: it puts a last success
// under jobs/ (keys.Layout.SuccessInJobs), where replicas before
// assign.SuccessApart read it, while any member is one of them (a rolling
// upgrade) or the members are not known yet.
func (c *core) endKeys() keys.Layout {
	k := c.d.Keys
	k.SuccessInJobs = c.d.Peers != nil && !c.d.Peers.Every(assign.SuccessApart)
	return k
}

// untilStart waits for entry's due time, and cancels the run when its
// slot can no longer be trusted by then: paused past the session's
// deadline while waiting (a SIGSTOP, a VM stall), the guard's timer and
// this wait end together, in either order, and the lease may be gone and
// the slot another's: do not start (docs/design.md#the-safety-rules, rule 5).
func (c *core) untilStart(runCtx context.Context, cancel context.CancelCauseFunc, entry *queue.Entry, held *slots.Held) {
	if d := entry.NotBefore.Sub(c.d.Clock.Now()); d > 0 {
		t := c.d.Clock.NewTimer(d)
		select {
		case <-runCtx.Done():
		case <-t.Chan():
		}
		t.Stop()
	}
	if runCtx.Err() == nil && held.Expired() {
		cancel(session.ErrGuardExpired)
	}
}

// runTarget calls the run's target, unless its context ended first (then
// it is cancelled with the cause).
func (c *core) runTarget(runCtx context.Context, entry *queue.Entry, held *slots.Held, log *slog.Logger, span *tracing.Run, startedAt time.Time) target.Result {
	if runCtx.Err() != nil {
		return target.Result{Outcome: runs.Cancelled, Error: context.Cause(runCtx).Error()}
	}
	c.d.Metrics.Lateness.Observe(startedAt.Sub(entry.NotBefore).Seconds())
	if log.Enabled(runCtx, slog.LevelDebug) { // else not even the call: its frame grew every run's stack
		log.Debug("run started")
	}
	var resourceSlots []string
	for _, r := range held.Resources {
		resourceSlots = append(resourceSlots, r.Name+"/"+strconv.Itoa(r.Index))
	}
	traceParent, traceState := span.TraceContext()
	shard, shards, _ := entry.Shard()
	return c.d.Executor.Execute(runCtx, &entry.Spec, target.Run{
		Shard:         shard,
		Shards:        shards,
		ResourceSlots: resourceSlots,
		Job:           entry.Job,
		RunID:         entry.RunID,
		Attempt:       entry.Attempt,
		ScheduledAt:   entry.ScheduledAt,
		Slot:          held.Slot,
		FencingToken:  held.Token,
		Holder:        c.d.ID,
		Input:         entry.Input,
		TraceParent:   traceParent,
		TraceState:    traceState,
	})
}

// outcomeOf is the outcome of a run cancelled with cause: lost when its
// slot could not be trusted any more (the lease may be gone; retried like
// a lost run), interrupted when a graceful shutdown cut it (queued again
// at once for another replica, without using a retry:
// docs/design-run-end.md#a-graceful-shutdown-requeues-what-it-cuts),
// unless on_shutdown says cancel.
func outcomeOf(outcome runs.Outcome, cause error, onShutdown string) runs.Outcome {
	switch {
	case outcome != runs.Cancelled:
	case untrusted(cause):
		return runs.Lost
	case errors.Is(cause, errShutdown) && onShutdown != config.OnShutdownCancel:
		return runs.Interrupted
	}
	return outcome
}

// logUnreleased says why a run's end could not be applied.
func logUnreleased(log *slog.Logger, err error, outcome runs.Outcome) {
	switch {
	case errors.Is(err, slots.ErrNotOwner):
		log.Warn("slot lost before release: the leader records the run lost", "outcome", outcome)
	default:
		log.Error("release failed: the leader records the run lost once the lease expires", "outcome", outcome, "err", err)
	}
}

// keepOrRelease releases the slot with the attempt's end, or, for a strict
// retry (retries.hold_slot), keeps it: the retry's entry then says which
// slot it holds. A lost attempt's slot cannot be trusted and is released
// (the run's session may be gone); an interrupted attempt's replica is
// going away, so its next attempt claims afresh elsewhere. When the keep
// certainly did not apply (refused, not sent), the slot is released as
// usual: that loses the strictness of one retry, never a run. A keep whose
// outcome is still unknown is not followed by a release, which would
// write the attempt's record again and could free the slot its retry
// holds: settle sends it again, and slots.Keep applies it once. An assigned run
// keeps no slot (admission.Of), and its release compares its slot only:
// the leader records such a run lost only once its incarnation's member
// key is off its lease, which the key leaves only once the lease, and the
// slot with it, is gone (election.Membership.Run).
func (c *core) keepOrRelease(ctx context.Context, q *queue.Item, entry *queue.Entry, held *slots.Held, outcome runs.Outcome, retry *queue.Entry, ops []clientv3.Op) error {
	if q.Key == "" || retry == nil || !entry.Spec.Retries.HoldSlot || outcome == runs.Lost || outcome == runs.Interrupted {
		return c.d.Slots.Release(ctx, held, ops...)
	}
	hold := queue.Hold{Holder: c.d.ID, Lease: int64(held.Lease), Slot: held.Slot, Token: held.Token}
	for _, r := range held.Resources {
		hold.Resources = append(hold.Resources, queue.HeldResource{Name: r.Name, Index: r.Index})
	}
	err := c.d.Slots.Keep(ctx, held, q.Key, queue.Holding(ops, q.Key, retry, hold)...)
	if err == nil || errors.Is(err, slots.ErrNotOwner) || errors.Is(err, slots.ErrIndeterminate) {
		return err
	}
	c.d.Log.Warn("keeping the slot for the retry failed; releasing it", "job", q.Job, "run_id", q.RunID, "err", err)
	return c.d.Slots.Release(ctx, held, ops...)
}

// interruptedWhy is the record's error of a run a graceful shutdown cut:
// what happened and what follows.
func interruptedWhy(e *queue.Entry, maxInterruptions int) string {
	const cut = "this replica shut down and its shutdown_grace ended before the run did"
	if n := runs.Interruptions(e.Previous); n >= maxInterruptions {
		times := fmt.Sprintf("%d times", n)
		if n == 1 {
			times = "once"
		}
		return fmt.Sprintf("%s; not queued again: interrupted %s before (worker.max_interruptions %d)", cut, times, maxInterruptions)
	}
	return cut + "; queued again for another replica, without using a retry"
}

// untrusted says whether a run's context ended because its slot can no
// longer be trusted: the session's guard passed or its lease is gone.
func untrusted(cause error) bool {
	return errors.Is(cause, session.ErrGuardExpired) || errors.Is(cause, session.ErrLeaseGone)
}
