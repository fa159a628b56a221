package leader

import (
	"context"
	"errors"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/follow"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
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

// reaper is the actor that records runs whose holder died, for one term.
// Its state is its goroutine's (Run): no lock.
type reaper struct {
	*base
	// suspects are the running entries seen without their slot, by when
	// first seen so.
	suspects map[string]time.Time
}

func newReaper(b *base) *reaper { return &reaper{base: b, suspects: map[string]time.Time{}} }

// Run records runs whose holder died (docs/design.md#the-safety-rules, rule 7): a running entry whose
// slot key no longer has the entry's ModRevision as CreateRevision was
// neither released nor is it held. The run is recorded lost and retried
// when retries remain.
func (rp *reaper) Run(ctx context.Context) error {
	suspects := rp.suspects
	timer := rp.d.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		queueChanged, slotsChanged := rp.d.Queue.Changed(), rp.d.Slots.Changed()
		now := rp.d.Clock.Now()
		alive := map[string]bool{}
		next := time.Duration(0)
		for _, q := range rp.d.Queue.Running() {
			alive[q.Key] = true
			// Only the running entries' slots are looked up: held slots
			// are mostly lean runs', which have no entry (a lookup each,
			// not a decoded list of every held slot on every change).
			if token, held := rp.d.Slots.Token(rp.d.Keys.SlotOf(q.Job, q.ConcurrencyKey, q.Slot)); held && ownSlot(q, token) {
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
			if err := rp.markLost(ctx, q); err != nil {
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
		if !rp.pause(ctx, looked.Add(reapGap)) {
			return nil
		}
	}
}

func (rp *reaper) markLost(ctx context.Context, q *queue.Item) error {
	// The run's spec decides its retry and what its end causes when the
	// job left the config.
	if r, err := rp.d.Specs.Resolve(ctx, q); err == nil {
		q = r
	} else if !errors.Is(err, queue.ErrSpecMissing) {
		if ctx.Err() == nil {
			rp.d.Log.Warn("reading a lost run's spec failed; will retry", "job", q.Job, "run_id", q.RunID, "err", err)
		}
		return nil
	} else {
		// Cannot happen while the run's entry refers to it (specs.go);
		// recorded lost all the same, without a retry.
		rp.d.Log.Error("a lost run's spec is gone: recorded without a retry", "job", q.Job, "run_id", q.RunID, "err", err)
	}
	slotKey := rp.d.Keys.SlotOf(q.Job, q.ConcurrencyKey, q.Slot)
	now := rp.d.Clock.Now()
	rec := q.Lost(q.Token(), now)
	ops, retry := follow.End(rp.d.Keys, rp.d.Config(), q.Key, q.Entry, &rec, now)
	// The slot is neither of those ownSlot takes for the run's own.
	cmps := []clientv3.Cmp{
		rp.fence,
		clientv3.Compare(clientv3.ModRevision(q.Key), "=", q.ModRev),
		clientv3.Compare(clientv3.CreateRevision(slotKey), "!=", q.ModRev),
	}
	if q.Token() != q.ModRev {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(slotKey), "!=", q.Token()))
	}
	resp, err := rp.d.Client.Txn(ctx).If(cmps...).Then(ops...).Else(clientv3.OpGet(rp.term.Key)).Commit()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		rp.d.Log.Warn("recording a lost run failed; will retry", "job", q.Job, "run_id", q.RunID, "err", err)
		return nil
	}
	if !resp.Succeeded {
		if rp.fenceGone(resp) {
			return errNotLeader
		}
		return nil // released or re-claimed meanwhile
	}
	rp.d.Metrics.Runs.WithLabelValues(q.Job, string(runs.Lost)).Inc()
	rp.d.Finished.Note(q.Job)
	rp.d.Log.Warn("run lost: holder died holding its slot", "job", q.Job, "run_id", q.RunID, "holder", q.Holder,
		"slot", q.Slot, "token", q.Token(), "retry", retry != nil)
	return nil
}

// ownSlot tells whether a slot key created at token is q's: created by the
// claim that wrote q running (its ModRevision), or the slot a previous
// attempt kept (q.Token). A replica of an earlier version wrote a retry claimed
// afresh as still naming a dead hold's token; its slot is its own all the
// same, and the run is not lost.
func ownSlot(q *queue.Item, token int64) bool {
	return token == q.Token() || token == q.ModRev
}
