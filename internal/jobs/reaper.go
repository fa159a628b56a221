package jobs

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// lostGrace: a running entry must be seen without its slot for this long
// before the leader acts, so that two views catching up at different speeds
// (the queue's and the slots') do not cost a wasted transaction. The
// transaction itself decides, so a shorter grace would still be safe.
const lostGrace = 500 * time.Millisecond

// reapGap is the least time between two looks at the running runs. Every
// claim and release changes the queue and the slots, so at 1,000 runs/s a
// reaper that looked at each change spent a seventh of the leader's CPU
// rebuilding the same maps; a loss waits lostGrace anyway.
const reapGap = 100 * time.Millisecond

// reap records runs whose holder died (SPEC rule 7): a running entry whose
// slot key no longer has the entry's ModRevision as CreateRevision was
// neither released nor is it held. The run is recorded lost and retried
// when retries remain.
func (l *leader) reap(ctx context.Context) error {
	suspects := map[string]time.Time{}
	timer := l.e.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		queueChanged, slotsChanged := l.e.queue.Changed(), l.e.opts.Slots.Changed()
		held := map[string]int64{} // job slot key -> token
		for _, s := range l.e.opts.Slots.List() {
			if s.Job != "" {
				held[slots.SlotKey(l.e.opts.Prefix, s.Job, s.Slot)] = s.FencingToken
			}
		}
		now := l.e.clock.Now()
		alive := map[string]bool{}
		next := time.Duration(0)
		for _, q := range l.e.queue.listRunning() {
			alive[q.Key] = true
			if held[slots.SlotKey(l.e.opts.Prefix, q.Job, q.Slot)] == q.ModRev {
				delete(suspects, q.Key)
				continue
			}
			first, seen := suspects[q.Key]
			if !seen {
				suspects[q.Key] = now
				first = now
			}
			if wait := first.Add(lostGrace).Sub(now); wait > 0 {
				if next == 0 || wait < next {
					next = wait
				}
				continue
			}
			if err := l.markLost(ctx, q); err != nil {
				return err
			}
			delete(suspects, q.Key)
		}
		for k := range suspects {
			if !alive[k] {
				delete(suspects, k)
			}
		}
		timer.Reset(time.Hour)
		if next > 0 {
			timer.Reset(next)
		}
		looked := now
		select {
		case <-ctx.Done():
			return nil
		case <-queueChanged:
		case <-slotsChanged:
		case <-timer.Chan():
		}
		if !l.pause(ctx, looked.Add(reapGap)) {
			return nil
		}
	}
}

// pause waits until t, or returns false when ctx ends first.
func (l *leader) pause(ctx context.Context, t time.Time) bool {
	d := t.Sub(l.e.clock.Now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := l.e.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.Chan():
		return true
	}
}

func (l *leader) markLost(ctx context.Context, q *queued) error {
	slotKey := slots.SlotKey(l.e.opts.Prefix, q.Job, q.Slot)
	now := l.e.clock.Now()
	rec := q.record(runs.Lost)
	rec.FencingToken = q.ModRev
	rec.EndedAt = now.UTC()
	rec.Error = fmt.Sprintf("holder %s lost slot %d (its session ended) before recording an outcome", q.Holder, q.Slot)
	ops := []clientv3.Op{clientv3.OpPut(l.e.keys.Record(q.Job, q.RunID), encodeRecord(&rec))}
	retry := q.retry(now, &rec)
	if retry != nil {
		ops = append(ops, clientv3.OpPut(q.Key, retry.encode()))
	} else {
		ops = append(ops, clientv3.OpDelete(q.Key))
	}
	resp, err := l.e.opts.Client.Txn(ctx).If(
		l.fence,
		clientv3.Compare(clientv3.ModRevision(q.Key), "=", q.ModRev),
		clientv3.Compare(clientv3.CreateRevision(slotKey), "!=", q.ModRev),
	).Then(ops...).Else(clientv3.OpGet(l.fenceKey)).Commit()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		l.e.log.Warn("recording a lost run failed; will retry", "job", q.Job, "run_id", q.RunID, "err", err)
		return nil
	}
	if !resp.Succeeded {
		if l.fenceGone(resp) {
			return errNotLeader
		}
		return nil // released or re-claimed meanwhile
	}
	l.e.metrics.runs.WithLabelValues(q.Job, string(runs.Lost)).Inc()
	l.e.noteFinished(q.Job)
	l.e.log.Warn("run lost: holder died holding its slot", "job", q.Job, "run_id", q.RunID, "holder", q.Holder,
		"slot", q.Slot, "token", q.ModRev, "retry", retry != nil)
	return nil
}
