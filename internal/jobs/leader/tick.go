package leader

import (
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/follow"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/schedule"
)

// The writes of one tick and the compares that make them happen once,
// shared by the one-job path (pass.go) and batches (batch.go).

// tickWriter writes the passes' ticks and moves the cursors with them,
// every write fenced by the term and compared with the cursor as the
// cursor book knows it (cursors.go). It keeps no state of its own: what
// it learns goes to the cursor book and the spec book.
type tickWriter struct {
	*base
	cursors *cursorBook
	book    *specBook
}

// tickOps are the writes that materialize tick t of job j: its queue
// entry (and its spec, unless this term wrote it: specs.go), or its missed
// or skipped record (with its unstarted marker) and what the record
// causes (its notifications and chained runs, follow.Record). health is
// the health transitions (of the job, and of a chained job whose run is
// recorded skipped), apart because a transaction may put a key only once:
// a batch writing several records of one job keeps one (MergeHealth). Both
// the one-job and the batched path use it.
func (tw *tickWriter) tickOps(cfg *config.Config, j *config.Job, t plannedTick, now time.Time) (runID string, ops, health []clientv3.Op) {
	runID = runs.ID(j.Name, t.At)
	if t.Action == queueTick {
		entry := queue.NewEntry(runID, j, cfg.Resources, t.At, t.NotBefore, 1, runs.Schedule)
		entry.CatchUp = t.CatchUp
		if err := entry.RenderKey(); err != nil {
			// The job's own input renders no key: the tick is recorded, in
			// place of its entry, so it is not silently dropped, with what
			// that record causes, as for a missed tick.
			rec := entry.NotStarted(runs.Skipped, now, err.Error())
			f := follow.Record(tw.d.Keys, cfg, j, &rec, entry.Input, now)
			return runID, append(queue.RecordOps(tw.d.Keys, &rec), f.Ops...), f.Health
		}
		ops = []clientv3.Op{clientv3.OpPut(tw.d.Keys.Entry(j.Name, runID), entry.Encode())}
		if spec, ok := entry.SpecOp(tw.d.Keys); ok && !tw.book.isWritten(entry.SpecKey(tw.d.Keys)) {
			ops = append([]clientv3.Op{spec}, ops...)
		}
		return runID, ops, nil
	}
	rec := queue.MissedTick(j.Name, runID, t.At,
		fmt.Sprintf("not started: due %s, leader caught up at %s (catch_up: %s, starting_deadline: %s)",
			t.NotBefore.UTC().Format(runs.TimeFormat), now.UTC().Format(runs.TimeFormat), j.CatchUp, j.StartingDeadline))
	f := follow.Record(tw.d.Keys, cfg, j, &rec, nil, now)
	ops = append(queue.RecordOps(tw.d.Keys, &rec), f.Ops...)
	return runID, ops, f.Health
}

// absent are the compares that make a tick's write happen at most once
// (docs/design.md#the-safety-rules, rule 2): no queue entry and no record of the run.
func (tw *tickWriter) absent(job, runID string) []clientv3.Cmp {
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(tw.d.Keys.Entry(job, runID)), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(tw.d.Keys.Record(job, runID)), "=", 0),
	}
}

// countTick records a written tick in the metrics.
func (tw *tickWriter) countTick(job string, t plannedTick) {
	if t.Action == queueTick {
		tw.d.Metrics.Ticks.Inc()
		return
	}
	tw.d.Metrics.Runs.WithLabelValues(job, string(runs.Missed)).Inc()
	tw.d.Metrics.Skipped.WithLabelValues(job, "missed").Inc()
}

// nextWake is when to look at a job again once its cursor is at cursor,
// planned la ahead: when its next tick comes within la. A job bounded by
// its tick count (lookahead.go) thus wakes about once per tick, as its
// oldest tick comes due.
func nextWake(sched schedule.Schedule, cursor time.Time, la time.Duration) time.Time {
	next := sched.Next(cursor)
	if next.IsZero() {
		return time.Time{}
	}
	return next.Add(-la)
}
