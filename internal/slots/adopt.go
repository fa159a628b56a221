package slots

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/session"
)

// The lean run protocol (docs/protocol.md) claims slots in its own
// transaction (assign.Claimer.ClaimChunk); what it took is then tracked and
// released here like any claim: the view's delete of a key cancels the
// holder, and the release is owner-checked.

// ErrNotApplied: a ReleaseIf gave the slot up but its conditions failed, so
// its writes were not applied (for a lean run: the leader recorded it first).
var ErrNotApplied = errors.New("slots: released without its writes")

// Adopt tracks slots that a transaction outside the semaphore put under
// sess's lease with token as their CreateRevision: the job's (or its
// concurrency key's) slot index slot and one slot of each resource.
func (s *Semaphore) Adopt(sess *session.Session, job, key string, slot int, token int64, res []HeldResource, v Value) *Held {
	ks := []string{s.layout.Slot(keys.SlotGroup(job, key), slot)}
	for _, r := range res {
		ks = append(ks, s.layout.ResourceSlot(r.Name, r.Index))
	}
	h := newHeld(sess, job, slot, token, res, ks, v)
	s.track(h)
	s.logger.Debug("slot adopted", "job", job, "slot", slot, "token", token, "run_id", v.RunID)
	return h
}

// FreeIndex is a slot index below limit that the view shows free in a job
// slot group or a resource; ok is false when the view shows none. A job
// slot group of one slot has only index 0, whatever the view; one of more
// wants the job slots' view, and until it is loaded is offered index 0
// too: a claim refused so takes the queue path, which reads.
func (s *Semaphore) FreeIndex(kind Kind, name string, limit int) (index int, ok bool) {
	if kind == JobSlot {
		if limit <= 1 {
			return 0, true
		}
		s.Want()
	}
	free := s.free(kind, name, limit)
	if len(free) == 0 {
		return 0, false
	}
	return free[0], true
}

// ReleaseIf is Release whose writes then also need cmps: the slot is given
// up when it is still this claim's either way, and then is applied only
// when cmps hold too. ErrNotApplied says the slot was released without
// them; ErrNotOwner, as for Release, that nothing was. A release whose
// response was lost and that is read back as applied reports nil, not
// knowing whether cmps held.
func (s *Semaphore) ReleaseIf(ctx context.Context, h *Held, cmps []clientv3.Cmp, then ...clientv3.Op) error {
	if len(cmps) == 0 {
		return s.Release(ctx, h, then...)
	}
	resp, err := s.release(ctx, h, clientv3.OpTxn(cmps, then, nil))
	if err != nil {
		return err
	}
	if resp != nil && !resp.Responses[len(h.keys)].GetResponseTxn().Succeeded {
		return fmt.Errorf("slots: release %s slot %d token %d: %w", h.Job, h.Slot, h.Token, ErrNotApplied)
	}
	return nil
}
