package worker

import (
	"context"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
)

// A strict retry's kept slot (retries.hold_slot) is its holder's to claim
// the retry with, and its holder's to give up when the retry no longer
// needs it: the retry was cancelled or its job removed (its entry
// deleted), or another worker claimed it on a fresh slot (the holder was
// slow to). Left alone, the slot would take a place of the job's limit
// until the holder's session ends, which for a live replica is never.
// The holder learns of it from its queue view: the entry it wrote with
// the hold was replaced by one that names neither the hold nor a run on
// it (docs/design-admission.md#strict-retries-retrieshold_slot).

// keptLeft is the hold self kept for prev's retry, when q (nil: the
// entry deleted) no longer names it.
func keptLeft(self string, q, prev *queue.Item) (slots.Kept, bool) {
	if prev == nil || prev.State != queue.Pending || prev.Hold == nil || prev.Hold.Holder != self {
		return slots.Kept{}, false
	}
	h := prev.Hold
	if q != nil && (q.Hold != nil && q.Hold.Token == h.Token || q.HeldToken == h.Token) {
		return slots.Kept{}, false // still waiting on it, or running on it
	}
	return keptOf(prev), true
}

// keptOf names the keys q's hold keeps; q must carry a Hold.
func keptOf(q *queue.Item) slots.Kept {
	return slots.Kept{Job: q.Job, Key: q.ConcurrencyKey, Slot: q.Hold.Slot, Token: q.Hold.Token, Resources: heldResources(q.Hold)}
}

// heldElsewhere reports whether q is a retry another worker (or this one
// on an earlier session) kept a slot for, and the view shows that slot
// alive: the holder claims it or gives it up, or its session ends and the
// slot goes with it, each a change of the slots the run waits for.
// Claiming it afresh meanwhile would run it beside the holder's slot, a
// place of the job's limit held for nothing.
func (qr *queueRunner) heldElsewhere(ctx context.Context, sess *session.Session, q *queue.Item) bool {
	return q.Hold != nil && !qr.holdsFor(sess, q) && qr.d.Slots.Holds(ctx, keptOf(q))
}

// noteKeptLeft queues the drop of the slot self kept for prev's retry
// when q no longer names it; the worker's loop sends it (dropKept). On
// the mirror goroutine: it must not block.
func (qr *queueRunner) noteKeptLeft(q, prev *queue.Item) {
	k, ok := keptLeft(qr.d.ID, q, prev)
	if !ok {
		return
	}
	qr.mu.Lock()
	qr.keptLeft = append(qr.keptLeft, k)
	qr.mu.Unlock()
	qr.signal()
}

// dropKept deletes the kept slots noted since the last call, in a
// goroutine of the worker's; each goes only while still created at its
// token, so one the holder's session took with it, or a slot claimed
// since, is left alone. A drop that fails leaves the slot to the session.
func (qr *queueRunner) dropKept(ctx context.Context) {
	qr.mu.Lock()
	left := qr.keptLeft
	qr.keptLeft = nil
	qr.mu.Unlock()
	if len(left) == 0 {
		return
	}
	qr.wg.Add(1)
	go func() {
		defer qr.wg.Done()
		for _, k := range left {
			dctx, cancel := context.WithTimeout(ctx, qr.d.Config().Cluster.SessionTTL.D())
			err := qr.d.Slots.DropKept(dctx, k)
			cancel()
			if err != nil {
				qr.d.Log.Warn("giving up a slot kept for a retry failed; it ends with the session", "job", k.Job, "slot", k.Slot, "token", k.Token, "err", err)
				continue
			}
			qr.d.Log.Info("gave up the slot kept for a retry that no longer waits on it", "job", k.Job, "slot", k.Slot, "token", k.Token)
		}
	}()
}
