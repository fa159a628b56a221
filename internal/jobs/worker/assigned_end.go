package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/follow"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// How an assigned run that is not executed here ends: on the queue path
// (a pending entry), or with a record of why it never started. Each gives
// back the run's place under max_parallel (reserve).

// settleAssigned hands the run to the queue path: today's pending entry,
// if the assignment is still as read (its ModRevision: a withdrawal by the
// leader rewrites it) and the run has no entry and no
// record (else another decided, or decides: a moved assignment's new
// worker).
func (a *assignedRunner) settleAssigned(ctx context.Context, st *assign.Stored, e *queue.Entry, why string, unsettled *atomic.Int32) {
	defer a.core.finish(e.RunID)
	a.queueAssigned(ctx, st, e, why, unsettled)
}

// queueAssigned is settleAssigned for a run that holds no place: it is
// not active here, and the queue path may take it up at once.
func (a *assignedRunner) queueAssigned(ctx context.Context, st *assign.Stored, e *queue.Entry, why string, unsettled *atomic.Int32) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.d.Config().Cluster.SessionTTL.D())
	defer cancel()
	key := a.d.Keys.Entry(e.Job, e.RunID)
	resp, err := a.d.Client.Txn(wctx).If(
		clientv3.Compare(clientv3.ModRevision(st.Key(a.d.Keys)), "=", st.ModRevision),
		clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(a.d.Keys.Record(e.Job, e.RunID)), "=", 0),
	).Then(clientv3.OpPut(key, e.Encode())).Commit()
	if err != nil {
		unsettled.Add(1)
		a.d.Log.Warn("an assigned run could not be queued: the leader resolves it", "job", e.Job, "run_id", e.RunID, "err", err)
		return
	}
	a.d.Log.Debug("assigned run takes the queue path", "job", e.Job, "run_id", e.RunID, "why", why, "queued", resp.Succeeded, "assignment", st.Key(a.d.Keys))
}

// settleLater hands to the queue path the runs of r refused before their
// instant that are not tried again (no place free at the instant, the
// worker stops, the session ends): there they wait for the slot as any run
// does. They hold no place (claimChunk gave it back). Those of an
// assignment gone are its new worker's or the leader's to decide: a
// pending entry would be refused (it compares the assignment as read).
func (a *assignedRunner) settleLater(ctx context.Context, r *claimRound) {
	if r.gone {
		return
	}
	for _, run := range r.later {
		a.queueAssigned(ctx, &r.st, run.entry, string(assign.SlotTaken), &r.unsettled)
	}
}

// finishEnds gives back the places of ends' runs.
func (a *assignedRunner) finishEnds(ends []unclaimedEnd) {
	for _, end := range ends {
		a.core.finish(end.entry.RunID)
	}
}

// recordUnclaimed records ends, runs of st that were not claimed, with
// what each record causes, in one transaction that holds if the
// assignment is still as read (a moved one is its new worker's to
// decide); each record only if its run has none and no queue entry: a
// run this worker handed to the queue path (settleAssigned) is named by
// its assignment still, and by the version a leader's withdrawal of
// another job rewrites, which the worker takes up again; the queue path
// decides it (a record here too was a second decision).
func (a *assignedRunner) recordUnclaimed(ctx context.Context, st *assign.Stored, ends []unclaimedEnd, unsettled *atomic.Int32) {
	if len(ends) == 0 {
		return
	}
	ops := make([]clientv3.Op, len(ends))
	for i, end := range ends {
		rec := end.entry.NotStarted(end.outcome, a.d.Clock.Now(), end.msg)
		then := append(queue.RecordOps(a.d.Keys, &rec), follow.Record(a.d.Keys, a.d.Config(), end.entry.JobSpec(), &rec, end.entry.Input, rec.EndedAt).All()...)
		ops[i] = clientv3.OpTxn([]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(a.d.Keys.Record(end.entry.Job, end.entry.RunID)), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(a.d.Keys.Entry(end.entry.Job, end.entry.RunID)), "=", 0),
		}, then, nil)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.d.Config().Cluster.SessionTTL.D())
	defer cancel()
	resp, err := a.commit(wctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(st.Key(a.d.Keys)), "=", st.ModRevision)}, ops)
	switch {
	case err != nil:
		unsettled.Add(1)
		a.d.Log.Warn("recording assigned runs as not started failed: the leader resolves them", "runs", len(ends), "assignment", st.Key(a.d.Keys), "err", err)
		return
	case !resp.Succeeded:
		// Moved or withdrawn by the leader: decided there.
		a.d.Log.Debug("assigned runs decided elsewhere", "runs", len(ends), "assignment", st.Key(a.d.Keys))
		return
	}
	// One line for the runs of a chunk ended together, each at debug: at
	// twice the ceiling a line a run cost a replica a third of recording
	// them.
	level := slog.LevelInfo
	if len(ends) > 1 {
		level = slog.LevelDebug
	}
	each := a.d.Log.Enabled(ctx, level)
	var recorded []unclaimedEnd
	for i, end := range ends {
		if !resp.Responses[i].GetResponseTxn().GetSucceeded() {
			continue // recorded already
		}
		recorded = append(recorded, end)
		a.d.Metrics.NotStarted(end.entry.Job, string(end.outcome), end.reason)
		if each {
			a.d.Log.Log(ctx, level, "run not started", "job", end.entry.Job, "run_id", end.entry.RunID, "outcome", end.outcome, "reason", end.msg)
		}
	}
	if len(ends) > 1 && len(recorded) > 0 {
		first := recorded[0]
		a.d.Log.Info("runs not started", "runs", len(recorded), "due", st.At, "first_job", first.entry.Job,
			"first_outcome", first.outcome, "first_reason", first.msg)
	}
}

// commit sends a transaction of this worker's in its group commit when it
// has one (Deps.Batch), else alone.
func (a *assignedRunner) commit(ctx context.Context, cmps []clientv3.Cmp, ops []clientv3.Op) (*clientv3.TxnResponse, error) {
	if a.d.Batch != nil {
		return a.d.Batch.Commit(ctx, txnbatch.Txn{If: cmps, Then: ops})
	}
	return a.d.Client.Txn(ctx).If(cmps...).Then(ops...).Commit()
}

// cleanupTries bounds how often a cleanup reads again after a conflict (a
// marker written since the read, by a chunk of this assignment).
const cleanupTries = 5

// cleanup deletes st and its claim markers once every run it names is
// settled, comparing what it knows of them; when that fails (a chunk sent
// again after a lost answer wrote its marker anew) it reads them and
// tries again. An assignment gone or written anew is not this worker's.
func (a *assignedRunner) cleanup(ctx context.Context, st assign.Stored, log *slog.Logger) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.d.Config().Cluster.SessionTTL.D())
	defer cancel()
	// First as this worker knows them: the assignment as it claimed from
	// it and each chunk's marker at the chunk's commit. No read: a read of
	// the worker's assignments costs etcd more than the whole cleanup.
	if err := a.d.Assign.Cleanup(wctx, st); err == nil || !errors.Is(err, assign.ErrConflict) {
		if err != nil {
			log.Warn("deleting a settled assignment failed: the leader deletes it", "err", err)
		}
		return
	}
	for range cleanupTries {
		snap, err := a.d.Assign.Read(wctx, st.Worker)
		if err != nil {
			log.Warn("reading an assignment to delete it failed: the leader deletes it", "err", err)
			return
		}
		cur, ok := storedAt(snap, &st)
		if !ok {
			return
		}
		err = a.d.Assign.Cleanup(wctx, cur)
		if !errors.Is(err, assign.ErrConflict) {
			if err != nil {
				log.Warn("deleting a settled assignment failed: the leader deletes it", "err", err)
			}
			return
		}
	}
}

// storedAt is st as found in snap, if it was not written anew since (a
// leader's withdrawal rewrites an assignment no chunk has claimed from).
func storedAt(snap assign.Snapshot, st *assign.Stored) (assign.Stored, bool) {
	for _, cur := range snap.Assignments {
		if cur.At.Equal(st.At) && cur.Group == st.Group && cur.ModRevision == st.ModRevision {
			return cur, true
		}
	}
	return assign.Stored{}, false
}
