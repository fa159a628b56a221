package jobs

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/schedule"
)

// tickBatch bounds the jobs whose ticks share one transaction. Each adds
// three compares (cursor, queue entry absent, record absent) and two puts;
// with the fence that is 121 compares, under etcd's default --max-txn-ops
// of 128.
const tickBatch = 40

// batchItem is a job whose pass is exactly one tick, on time, after a
// cursor the leader knows: the steady state of every job. Such ticks are
// written many to a transaction, so materializing costs etcd a fraction of
// a revision per run instead of one (the benchmark's throughput scenario
// found the leader's one-transaction-per-tick the bound at ~1,000 runs/s).
type batchItem struct {
	job   *config.Job
	sched schedule.Schedule
	known time.Time // the cursor as stored
	tick  plannedTick
}

// batchable returns j's item when its pass can share a transaction; every
// other case (unknown cursor, paused, several or late or missed ticks,
// nothing to do) takes the one-job path, which handles it in full.
func (l *leader) batchable(j *config.Job, now time.Time) (batchItem, bool) {
	sched, err := j.ParsedSchedule()
	if err != nil {
		return batchItem{}, false
	}
	l.mu.Lock()
	cursor, known := l.cursors[j.Name]
	l.mu.Unlock()
	if !known || l.e.state.isPaused(j.Name, j.Paused) {
		return batchItem{}, false
	}
	p := planTicks(j, sched, cursor, now, l.e.opts.Lookahead)
	if p.Dropped > 0 || len(p.Ticks) != 1 || p.Ticks[0].Action != queueTick || p.Ticks[0].CatchUp || !p.Cursor.Equal(p.Ticks[0].At) {
		return batchItem{}, false
	}
	return batchItem{job: j, sched: sched, known: cursor, tick: p.Ticks[0]}, true
}

// writeBatch materializes each item's tick in one transaction carrying, for
// every item, exactly the conditions of the one-job write (SPEC rule 2:
// cursor as known, no queue entry, no record) and the leader fence (rule
// 1): all ticks are written or none. ok is false when a condition other
// than the fence failed; the caller then takes the jobs one by one, which
// finds out which and why.
func (l *leader) writeBatch(ctx context.Context, items []batchItem) (ok bool, err error) {
	cfg := l.e.opts.Config()
	cmps := make([]clientv3.Cmp, 0, 1+3*len(items))
	ops := make([]clientv3.Op, 0, 2*len(items))
	cmps = append(cmps, l.fence)
	for _, it := range items {
		name := it.job.Name
		runID := runs.ID(name, it.tick.At)
		qkey, rkey, ckey := l.e.keys.Queue(name, runID), l.e.keys.Record(name, runID), l.e.keys.Cursor(name)
		cmps = append(cmps,
			clientv3.Compare(clientv3.Value(ckey), "=", it.known.UTC().Format(runs.TimeFormat)),
			clientv3.Compare(clientv3.CreateRevision(qkey), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(rkey), "=", 0))
		entry := newEntry(runID, it.job, cfg.Resources, it.tick.At, it.tick.NotBefore, 1, runs.Schedule)
		ops = append(ops, clientv3.OpPut(qkey, entry.encode()), clientv3.OpPut(ckey, it.tick.At.UTC().Format(runs.TimeFormat)))
	}
	resp, err := l.e.opts.Client.Txn(ctx).If(cmps...).Then(ops...).Else(clientv3.OpGet(l.fenceKey)).Commit()
	if err != nil {
		return false, fmt.Errorf("jobs: materialize %d jobs: %w", len(items), err)
	}
	if !resp.Succeeded {
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 0 || kvs[0].CreateRevision != l.fenceRev {
			return false, errNotLeader
		}
		return false, nil
	}
	for _, it := range items {
		l.setCursor(it.job.Name, it.tick.At)
		l.e.metrics.ticks.Inc()
	}
	return true, nil
}

// nextWake is when to look at a job again once its cursor is at cursor.
func (l *leader) nextWake(sched schedule.Schedule, cursor time.Time) time.Time {
	next := sched.Next(cursor)
	if next.IsZero() {
		return time.Time{}
	}
	return next.Add(-l.e.opts.Lookahead)
}

// splitBatches separates the due jobs into batches of one-tick jobs and
// the rest. A lone batchable job goes the one-job way.
func (l *leader) splitBatches(due []*config.Job, now time.Time) (batches [][]batchItem, single []*config.Job) {
	var cur []batchItem
	for _, j := range due {
		it, ok := l.batchable(j, now)
		if !ok {
			single = append(single, j)
			continue
		}
		if cur = append(cur, it); len(cur) == tickBatch {
			batches, cur = append(batches, cur), nil
		}
	}
	switch len(cur) {
	case 0:
	case 1:
		single = append(single, cur[0].job)
	default:
		batches = append(batches, cur)
	}
	return batches, single
}
