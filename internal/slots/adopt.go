package slots

import (
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/session"
)

// The lean run protocol (docs/protocol.md) claims slots in its own
// transaction (assign.Claimer.ClaimChunk); what it took is then tracked and
// released here like any claim: the view's delete of a key cancels the
// holder, and the release is owner-checked.

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
