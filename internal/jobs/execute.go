package jobs

import (
	"context"
	"errors"
	"log/slog"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/target"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
)

// execute runs a claimed entry at its due time and releases its slot with
// the record. The run's context ends when the slot can no longer be trusted
// (the session guard, SPEC rule 5), on a cancel request, or when the
// shutdown grace is over; never merely because the worker stops claiming.
func (w *worker) execute(q *queued, entry *Entry, held *slots.Held, log *slog.Logger) {
	e := w.e
	log = log.With("slot", held.Slot, "token", held.Token)
	runCtx, cancel := context.WithCancelCause(held.Context())
	defer cancel(nil)
	w.setCancel(q.RunID, cancel)

	if d := entry.NotBefore.Sub(e.clock.Now()); d > 0 {
		t := e.clock.NewTimer(d)
		select {
		case <-runCtx.Done():
		case <-t.Chan():
		}
		t.Stop()
	}
	startedAt := e.clock.Now()
	var res target.Result
	if runCtx.Err() != nil {
		res = target.Result{Outcome: runs.Cancelled, Error: context.Cause(runCtx).Error()}
	} else {
		e.metrics.lateness.Observe(startedAt.Sub(entry.NotBefore).Seconds())
		log.Debug("run started")
		var resourceSlots []string
		for _, r := range held.Resources {
			resourceSlots = append(resourceSlots, r.Name+"/"+strconv.Itoa(r.Index))
		}
		res = e.opts.Executor.Execute(runCtx, &entry.Spec, target.Run{
			ResourceSlots: resourceSlots,
			Job:           entry.Job,
			RunID:         entry.RunID,
			Attempt:       entry.Attempt,
			ScheduledAt:   entry.ScheduledAt,
			Slot:          held.Slot,
			FencingToken:  held.Token,
			Holder:        e.opts.ID,
		})
	}
	endedAt := e.clock.Now()
	cause := context.Cause(runCtx)
	if res.Outcome == runs.Cancelled && (errors.Is(cause, session.ErrGuardExpired) || errors.Is(cause, session.ErrLeaseGone)) {
		// The lease may be gone: the run was stopped because its slot could
		// not be trusted any more. That is a lost run, retried like one.
		res.Outcome = runs.Lost
	}

	rec := entry.record(res.Outcome)
	rec.StartedAt = startedAt.UTC()
	rec.EndedAt = endedAt.UTC()
	rec.Slot = held.Slot
	rec.FencingToken = held.Token
	res.Fill(&rec)
	ops := []clientv3.Op{clientv3.OpPut(e.keys.Record(entry.Job, entry.RunID), encodeRecord(&rec))}
	var retry *Entry
	if res.Outcome.Retryable() {
		retry = entry.retry(endedAt, &rec)
	}
	if retry != nil {
		ops = append(ops, clientv3.OpPut(q.Key, retry.encode()))
	} else {
		ops = append(ops, clientv3.OpDelete(q.Key))
	}

	// Release even though the run's context may be over; bounded by the
	// TTL, after which the lease has expired and the leader takes over.
	relCtx, relCancel := context.WithTimeout(context.Background(), e.opts.Config().Cluster.SessionTTL.D())
	err := e.opts.Slots.Release(relCtx, held, ops...)
	relCancel()
	e.metrics.duration.WithLabelValues(entry.Job).Observe(endedAt.Sub(startedAt).Seconds())
	if err != nil {
		if errors.Is(err, slots.ErrNotOwner) {
			log.Warn("slot lost before release: the leader records the run lost", "outcome", res.Outcome)
		} else {
			log.Error("release failed: the leader records the run lost once the lease expires", "outcome", res.Outcome, "err", err)
		}
		return
	}
	e.metrics.runs.WithLabelValues(entry.Job, string(res.Outcome)).Inc()
	log.Info("run finished", "outcome", res.Outcome, "duration", endedAt.Sub(startedAt), "retry", retry != nil)
}
