package worker

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Assigned runs that are not to start (docs/protocol.md, "Shedding"):
// past their starting deadline (missed), of a paused job (skipped), or
// superseded: more than shedAfter late while a newer tick of their job is
// due, which the job's catch_up (latest or none) runs in their place, as
// the leader's plan does with ticks it finds late. A worker behind (more
// ticks due than it can start) so sheds its oldest ticks and starts the
// newest on time, instead of starting every tick later and later until
// the starting deadline records them all missed. They are recorded in one
// transaction per chunk, which costs etcd a fraction of a run's.

// shedAfter is how late an assigned run may start while a newer tick of
// its job is due: the leader's tolerance for a tick it plans late.
const shedAfter = time.Second

// unclaimedEnd is the record of an assigned run that does not start.
type unclaimedEnd struct {
	entry   *queue.Entry
	outcome runs.Outcome
	reason  string // the skipped metric's reason
	msg     string
}

// notToStart says whether e, due at at, is not to start at now, and with
// what record.
func (w *Worker) notToStart(e *queue.Entry, at, now time.Time) (unclaimedEnd, bool) {
	j := &e.Spec
	switch {
	case now.After(at.Add(j.StartingDeadline.D())):
		return unclaimedEnd{e, runs.Missed, metrics.ReasonDeadline,
			fmt.Sprintf("not claimed by its starting deadline %s (due %s)", j.StartingDeadline, at.UTC().Format(runs.TimeFormat))}, true
	case w.d.Paused != nil && w.d.Paused.Is(e.Job, j.Paused):
		return unclaimedEnd{e, runs.Skipped, metrics.ReasonPaused, "not started: the job is paused"}, true
	}
	if newer, ok := superseded(j, at, now); ok {
		return unclaimedEnd{e, runs.Missed, metrics.ReasonMissed,
			fmt.Sprintf("not started: %s late, and its job's tick at %s is due (catch_up: %s runs the newest)",
				now.Sub(at).Round(time.Millisecond), newer.UTC().Format(runs.TimeFormat), j.CatchUp)}, true
	}
	return unclaimedEnd{}, false
}

// superseded reports whether a run of j due at at is more than shedAfter
// late at now while j's next tick is due, under a catch_up that runs only
// the newest late tick (or none); and that tick.
func superseded(j *config.Job, at, now time.Time) (time.Time, bool) {
	if j.CatchUp == config.CatchUpAll || !now.After(at.Add(shedAfter)) {
		return time.Time{}, false
	}
	sched, err := j.ParsedSchedule()
	if err != nil {
		return time.Time{}, false
	}
	next := sched.Next(at)
	return next, !next.IsZero() && !next.After(now)
}

// endUnclaimed records ends, runs of st that were not claimed, with what
// each record causes, in one transaction that holds if the assignment is
// still as read (a moved one is its new worker's to decide); each record
// only if its run has none. It gives back each run's place.
func (w *Worker) endUnclaimed(ctx context.Context, st *assign.Stored, ends []unclaimedEnd, unsettled *atomic.Int32) {
	if len(ends) == 0 {
		return
	}
	defer func() {
		for _, end := range ends {
			w.finish(end.entry.RunID)
		}
	}()
	ops := make([]clientv3.Op, len(ends))
	for i, end := range ends {
		rec := end.entry.NotStarted(end.outcome, w.d.Clock.Now(), end.msg)
		then := append(queue.RecordOps(w.d.Keys, &rec), queue.Follows(w.d.Keys, w.d.Config(), end.entry.JobSpec(), &rec, end.entry.Input, rec.EndedAt).All()...)
		ops[i] = clientv3.OpTxn([]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(w.d.Keys.Record(end.entry.Job, end.entry.RunID)), "=", 0),
		}, then, nil)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.d.Config().Cluster.SessionTTL.D())
	defer cancel()
	resp, err := w.d.Client.Txn(wctx).If(
		clientv3.Compare(clientv3.ModRevision(st.Key(w.d.Keys)), "=", st.ModRevision),
	).Then(ops...).Commit()
	switch {
	case err != nil:
		unsettled.Add(1)
		w.d.Log.Warn("recording assigned runs as not started failed: the leader resolves them", "runs", len(ends), "assignment", st.Key(w.d.Keys), "err", err)
		return
	case !resp.Succeeded:
		// Moved or withdrawn by the leader: decided there.
		w.d.Log.Debug("assigned runs decided elsewhere", "runs", len(ends), "assignment", st.Key(w.d.Keys))
		return
	}
	for i, end := range ends {
		if !resp.Responses[i].GetResponseTxn().GetSucceeded() {
			continue // recorded already
		}
		w.d.Metrics.NotStarted(end.entry.Job, string(end.outcome), end.reason)
		w.d.Log.Info("run not started", "job", end.entry.Job, "run_id", end.entry.RunID, "outcome", end.outcome, "reason", end.msg)
	}
}
