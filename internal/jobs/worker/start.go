package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/tracing"
)

// waitState is what a waiting run keeps between its attempts.
type waitState struct {
	replaced bool             // overlap: replace asked the oldest run to stop
	last     *slots.FullError // the limit that refused it last
	// turn is a limit the run found with room but left to its elders
	// (fair.go): when they have taken it, the run waits its turn there
	// rather than skip.
	turn *slots.FullError
	// The views' change channels as they were before the last attempt: a
	// change between a refusal and the park must wake the run.
	slotsChanged, queueChanged <-chan struct{}
	span                       *tracing.Run // the attempt's, from its first try
	noSpec                     bool         // the run's spec could not be read (logged once)
	// confirm: the next claim asks etcd before it is refused, because the
	// refusal would end the run (a skip) and the last came from the view.
	confirm bool
	// failures counts the run's tries that etcd failed, for the
	// backoff of the next (retry.go).
	failures int
}

// start tries once to claim q and, holding its slots, runs it. When q
// cannot start yet it returns the time to try again at the latest (a slot
// or queue change wakes it sooner) and holds no worker meanwhile: waiting
// happens in etcd, not in a goroutine counted against max_parallel.
func (qr *queueRunner) start(ctx context.Context, q *queue.Item, st *waitState) (retry time.Time, wait bool) {
	log := qr.d.Log.With("job", q.Job, "run_id", q.RunID, "attempt", q.Attempt)
	// One span covers the attempt from its first try to its end, across
	// the waits between tries.
	if st.span == nil {
		_, st.span = tracing.StartRun(ctx, qr.d.Tracer, tracing.RunInfo{Job: q.Job, RunID: q.RunID, Attempt: q.Attempt, Trigger: q.Trigger, Holder: qr.d.ID})
	}
	ctx = st.span.Into(ctx)
	defer func() {
		if !wait {
			st.span.End()
		}
	}()
	for ctx.Err() == nil {
		if !q.Resolved() {
			r, until, wait := qr.resolve(ctx, q, st)
			if r == nil {
				return until, wait
			}
			q = r
		}
		sess, err := qr.d.Sessions.Current(ctx)
		if err != nil {
			return time.Time{}, false
		}
		now := qr.d.Clock.Now()
		deadline := runs.StartBy(q.Trigger, q.NotBefore, q.Spec.StartingDeadline.D())
		if until, wait, decided := qr.beforeClaim(ctx, sess, q, st, now, deadline); decided {
			return until, wait
		}
		if until, wait, again := qr.claimAndRun(ctx, sess, q, st, log, now, deadline); !again {
			return until, wait
		}
	}
	return time.Time{}, false
}

// beforeClaim decides what needs no claim: a run past its starting
// deadline (missed), one of a paused job (skipped), one behind elders
// that wait for a limit it needs (behindElders). decided is false when
// the run is to be claimed now.
func (qr *queueRunner) beforeClaim(ctx context.Context, sess *session.Session, q *queue.Item, st *waitState, now, deadline time.Time) (until time.Time, wait, decided bool) {
	if now.After(deadline) {
		why := ""
		if st.last != nil {
			why = "; waiting for " + st.last.Error()
		}
		retry := qr.finishUnstarted(ctx, q, st, runs.Missed, metrics.ReasonDeadline,
			fmt.Sprintf("not started by its starting deadline %s (due %s)%s", q.Spec.StartingDeadline, q.NotBefore.Format(runs.TimeFormat), why))
		return retry, !retry.IsZero(), true
	}
	if qr.paused(q) {
		// The leader withdraws a paused job's ticks; this one came
		// due before it did.
		retry := qr.finishUnstarted(ctx, q, st, runs.Skipped, metrics.ReasonPaused, "not started: the job is paused")
		return retry, !retry.IsZero(), true
	}
	st.slotsChanged, st.queueChanged = qr.d.Slots.Changed(), qr.d.Queue.Changed()
	if qr.heldElsewhere(ctx, sess, q) {
		return deadline, true, true // kept.go
	}
	return qr.behindElders(ctx, sess, q, st, now, deadline)
}

// behindElders makes q wait while elders wait for a limit it needs (fair
// order, docs/design-admission.md#fair-order), and takes over an elder
// that is overdue. yielded is false when q goes first.
func (qr *queueRunner) behindElders(ctx context.Context, sess *session.Session, q *queue.Item, st *waitState, now, deadline time.Time) (until time.Time, wait, yielded bool) {
	// A strict retry on its kept slot waits for no elder: nothing else
	// can take that slot anyway.
	el := qr.fair.yieldTo(q, now)
	if el.overdue != nil {
		qr.takeOver(el.overdue)
	}
	// skip and replace act on a limit that is taken: with no room
	// left the claim is refused and the policy acts, elders or not.
	yield := q.Spec.Overlap == config.OverlapQueue || el.room > 0
	full := el.full
	if full == nil || !yield || qr.holdsFor(sess, q) {
		return time.Time{}, false, false
	}
	// Elders wait for a limit this run needs: their turn first, as if
	// the limit were full. A record names what holds them all back.
	st.last = el.why
	if el.free {
		st.turn = full
	}
	// Try again in a while at the latest (a change in the views wakes
	// the run sooner), and when an elder becomes overdue, to take it
	// over.
	end := now.Add(fairRecheck)
	if !el.retry.IsZero() && el.retry.Before(end) {
		end = el.retry
	}
	if q.Spec.Overlap != config.OverlapQueue {
		// skip and replace act on a limit that is taken, and this one
		// is not yet: wait for the elders to take it, then see.
		return end, true, true
	}
	// queue: the run waits in the job's queue, within queue_limit.
	until, wait = qr.refused(ctx, sess, q, st, full, now, deadline)
	if wait && end.Before(until) {
		until = end
	}
	return until, wait, true
}

// claimAndRun claims q once and, holding its slots, runs it; a refusal
// applies the job's overlap policy (refused). again: the session ended
// under the claim, and the run is tried with the next.
func (qr *queueRunner) claimAndRun(ctx context.Context, sess *session.Session, q *queue.Item, st *waitState, log *slog.Logger, now, deadline time.Time) (until time.Time, wait, again bool) {
	claimCtx, claimSpan := st.span.Claim(ctx)
	held, running, err := qr.claim(claimCtx, sess, q, st.confirm)
	st.confirm = false
	claimSpan.End(held, err)
	var full *slots.FullError
	switch {
	case err == nil:
		qr.noteClaimed(q, st)
		qr.core.execute(q, running, held, runLog(log, held), st.span)
		return time.Time{}, false, false
	case errors.Is(err, slots.ErrConflict):
		qr.d.Metrics.ClaimFails.WithLabelValues(metrics.ClaimTaken).Inc()
		return time.Time{}, false, false // claimed by another worker, cancelled, or changed
	case errors.As(err, &full):
		qr.d.Metrics.ClaimFails.WithLabelValues(metrics.ClaimFull).Inc()
		st.last = full
	case ctx.Err() != nil:
		return time.Time{}, false, false
	case errors.Is(err, session.ErrGuardExpired), errors.Is(err, session.ErrLeaseGone), sess.Err() != nil:
		return time.Time{}, false, true // wait for the next session
	default:
		at := st.failed(now)
		log.Warn("claim failed; will try again", "err", err, "at", at)
		return at, true, false
	}
	until, wait = qr.refused(ctx, sess, q, st, full, now, deadline)
	return until, wait, false
}

// resolve returns q with the spec its entry names, read from etcd when the
// view has not seen it. A run never starts without it: while etcd has no
// such spec (or cannot be read) the run waits, as long as its starting
// deadline allows, and is recorded missed after. The deadline is the
// spec's, so while it is unknown it is the job's in this replica's config
// (or the default).
func (qr *queueRunner) resolve(ctx context.Context, q *queue.Item, st *waitState) (r *queue.Item, until time.Time, wait bool) {
	// Taken before the read, so a spec that arrives after it wakes the run.
	st.slotsChanged, st.queueChanged = qr.d.Slots.Changed(), qr.d.Queue.Changed()
	r, err := qr.d.Specs.Resolve(ctx, q)
	if err == nil {
		return r, time.Time{}, false
	}
	if ctx.Err() != nil {
		return nil, time.Time{}, false
	}
	startingDeadline := config.DefaultStartingDeadline
	if j := qr.d.Config().Job(q.Job); j != nil && j.StartingDeadline > 0 {
		startingDeadline = j.StartingDeadline.D()
	}
	now := qr.d.Clock.Now()
	deadline := runs.StartBy(q.Trigger, q.NotBefore, startingDeadline)
	if now.After(deadline) {
		retry := qr.finishUnstarted(ctx, q, st, runs.Missed, metrics.ReasonDeadline,
			fmt.Sprintf("not started by its starting deadline %s (due %s): its job spec could not be read: %v",
				startingDeadline, q.NotBefore.Format(runs.TimeFormat), err))
		return nil, retry, !retry.IsZero()
	}
	if !st.noSpec {
		st.noSpec = true
		qr.d.Log.Warn("run waits for its job spec", "job", q.Job, "run_id", q.RunID, "spec", q.SpecRef, "err", err)
	}
	until = st.failed(now)
	if deadline.Before(until) {
		until = deadline.Add(time.Millisecond)
	}
	return nil, until, true
}

// paused reports whether q is a scheduled run of a paused job. Manual runs
// and retries of a paused job run: pause stops the schedule, not what a
// user or a failed attempt asked for. The entry's spec gives the file's
// setting (the leader's, when it scheduled the run; a change to it
// withdraws the run), the marker in etcd wins over it.
func (qr *queueRunner) paused(q *queue.Item) bool {
	return qr.d.Paused != nil && q.Trigger == runs.Schedule && qr.d.Paused.Is(q.Job, q.Spec.Paused)
}

// refused applies the job's overlap policy to a run a full limit refused.
func (qr *queueRunner) refused(ctx context.Context, sess *session.Session, q *queue.Item, st *waitState, full *slots.FullError, now, deadline time.Time) (time.Time, bool) {
	// A full rate window frees by time, not by a change anyone writes.
	until := deadline
	if full.Limit == slots.LimitRate && full.Until.Before(until) {
		until = full.Until
	}
	if q.Hold != nil && !qr.holdsFor(sess, q) {
		// Another worker kept a slot for this retry: it claims it, or its
		// lease ends and the slot frees. Either way a change comes.
		return until, true
	}
	// The record names the limit that held the run back (st.last): the
	// one refused, or for a run behind its elders the one they wait for.
	named := full
	if st.last != nil {
		named = st.last
	}
	reason, what := reasonOf(named)
	jobSlots := full.Limit == slots.LimitJob || full.Limit == slots.LimitKey
	switch {
	case now.Before(q.NotBefore):
		// Claimed early to start on time; the limit may yet free.
		if q.NotBefore.Before(until) {
			until = q.NotBefore
		}
		return until, true
	case q.CatchUp && q.Spec.Overlap != config.OverlapReplace:
		// Caught-up ticks take turns, whatever the overlap policy.
		return until, true
	case q.Spec.Overlap == config.OverlapSkip && sameLimit(st.turn, full) && now.Before(turnEnd(q)):
		// The limit had room at the run's due time but went to an elder
		// claimed late (fair.go): no overlap to skip for, its turn comes,
		// until the job's next tick is due: a job that falls further
		// behind skips as before, so a backlog cannot build up. (queue
		// waits anyway, within queue_limit; replace acts on the run that
		// holds the slot, as ever.)
		if end := turnEnd(q); end.Before(until) {
			until = end
		}
		return until, true
	case q.Spec.Overlap == config.OverlapQueue:
		return qr.queueOrSkip(ctx, q, st, full, what, now, until)
	case q.Spec.Overlap == config.OverlapReplace && jobSlots:
		qr.replaceOldest(ctx, sess, q, st)
		return until, true
	default:
		// skip, and replace when what is full is not the job's own: a
		// resource or a window has no run of this job to replace.
		if full.View {
			return st.confirmFirst(now)
		}
		retry := qr.finishUnstarted(ctx, q, st, runs.Skipped, reason, skipWhy(what, q.Spec.Overlap))
		return retry, !retry.IsZero()
	}
}

// queueOrSkip is overlap: queue's answer to a refusal: the run waits in
// its job's queue until until, or is skipped when queue_limit runs wait
// before it (after etcd confirms what the view refused).
func (qr *queueRunner) queueOrSkip(ctx context.Context, q *queue.Item, st *waitState, full *slots.FullError, what string, now, until time.Time) (time.Time, bool) {
	pos := queuePosition(qr.d.Queue, q, now)
	if pos < q.Spec.QueueLimit {
		return until, true
	}
	if full.View {
		return st.confirmFirst(now)
	}
	retry := qr.finishUnstarted(ctx, q, st, runs.Skipped, metrics.ReasonQueueFull,
		fmt.Sprintf("%s and %d runs already queued (queue_limit %d)", what, pos, q.Spec.QueueLimit))
	return retry, !retry.IsZero()
}

// replaceOldest is overlap: replace's answer to a refusal by the job's
// own slots: a cancel request for its oldest running run, once.
func (qr *queueRunner) replaceOldest(ctx context.Context, sess *session.Session, q *queue.Item, st *waitState) {
	if st.replaced {
		return
	}
	victim := oldestRunning(qr.d.Queue, q.Job, q.ConcurrencyKey)
	if victim == nil {
		return
	}
	if err := qr.writes.RequestCancel(ctx, sess.Lease(), victim.RunID, "replaced by "+q.RunID); err != nil {
		qr.d.Log.Warn("cannot cancel the run to replace", "job", q.Job, "run_id", q.RunID, "victim", victim.RunID, "err", err)
		return
	}
	qr.d.Log.Info("replacing the oldest running run", "job", q.Job, "run_id", q.RunID, "victim", victim.RunID)
	st.replaced = true
}

// turnEnd is how long a run waits for its turn after a late elder: until
// the job's next tick is due (or turnBound for a run off the schedule).
func turnEnd(q *queue.Item) time.Time {
	if sched, err := q.Spec.ParsedSchedule(); err == nil && q.Trigger == runs.Schedule {
		if next := sched.Next(q.ScheduledAt); !next.IsZero() {
			return q.NotBefore.Add(next.Sub(q.ScheduledAt))
		}
	}
	return q.NotBefore.Add(turnBound)
}

func sameLimit(a, b *slots.FullError) bool {
	return a != nil && b != nil && a.Limit == b.Limit && a.Name == b.Name
}

// reasonOf is the skip reason and message of a refusal (docs/design-admission.md):
// overlap for the job's slots or key, resource naming it, rate naming the
// window.
func reasonOf(full *slots.FullError) (reason, what string) {
	switch full.Limit {
	case slots.LimitResource:
		return metrics.ReasonResource, fmt.Sprintf("resource %s: all %d slots taken", full.Name, full.Slots)
	case slots.LimitRate:
		return metrics.ReasonRate, fmt.Sprintf("rate window %s full", full.Name)
	case slots.LimitKey:
		return metrics.ReasonOverlap, full.Error()
	}
	return metrics.ReasonOverlap, fmt.Sprintf("all %d slots taken", full.Slots)
}

// skipWhy is a skipped run's record: what was full, and the policy that
// skipped it. Both paths write it (assigned_claim.go skips a lean run
// etcd refused at its instant).
func skipWhy(what, overlap string) string {
	return fmt.Sprintf("%s (overlap: %s)", what, overlap)
}

// confirmFirst sends a run the view refused back for a claim that asks
// etcd: a skip is for good, and the view may not yet have seen the slot
// that freed (its watch and the queue's deliver apart; a run triggered just
// after another ended was skipped as if that one still ran). docs/design-admission.md: the overlap policy acts when the claim transaction cannot get all.
func (st *waitState) confirmFirst(now time.Time) (time.Time, bool) {
	st.confirm = true
	return now, true
}
