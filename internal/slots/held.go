package slots

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/session"
)

// HeldResource is the slot of one shared resource that a claim holds.
type HeldResource struct {
	Name  string
	Index int
}

// Held is a claim: a job slot and one slot of each resource the job names,
// all created by one transaction. They therefore share one CreateRevision,
// the fencing token of the run (docs/design.md#the-safety-rules, rule 6); a target guarding a resource
// can compare the same number.
type Held struct {
	Job   string
	Slot  int
	Token int64
	// Claimed is the revision of the claim's transaction: Token for a
	// claim that created its keys, later for one on a kept slot (ClaimHeld).
	Claimed   int64
	Resources []HeldResource
	Value     Value
	Lease     clientv3.LeaseID

	keys    []string // the job slot key first, then the resource keys
	ctx     context.Context
	cancel  context.CancelCauseFunc
	session context.Context

	// released is the revision of the release that applied; 0 before, or
	// when its answer was lost and read back.
	released int64
	// keepUnanswered: a keep of this claim was sent and its answer lost,
	// so it may apply yet (Keep).
	keepUnanswered bool
	// releaseUnanswered: a release was sent and its answer lost, so it may
	// apply yet: no keep is sent after it (Keep).
	releaseUnanswered bool
	// released, keepUnanswered and releaseUnanswered are written and read
	// only by the caller of Release and Keep: a claim's calls of the two
	// never overlap (the worker's settle, or one dropHeld), so no lock.

	// Guarded by Semaphore.mu.
	releasing bool // a release may apply: a delete is not a loss yet
	inRelease bool // a Release call runs: it tells what a delete was
	deleted   bool // the view saw a delete while a Release call ran
	expired   func() bool
}

func newHeld(sess *session.Session, job string, slot int, token int64, resources []HeldResource, keys []string, v Value) *Held {
	ctx, cancel := context.WithCancelCause(sess.Context())
	return &Held{
		Job:       job,
		Slot:      slot,
		Token:     token,
		Claimed:   token,
		Resources: resources,
		Value:     v,
		Lease:     sess.Lease(),
		keys:      keys,
		ctx:       ctx,
		cancel:    cancel,
		session:   sess.Context(),
		expired:   sess.Expired,
	}
}

// Expired reports whether the session holding the claim is past its
// guard's deadline, even before the guard has ended it (session.Expired):
// a run must not start on a lease that may be gone.
func (h *Held) Expired() bool { return h.expired != nil && h.expired() }

// Session ends when the session that holds the claim ends: from then on
// its keys are bound to a lease the server will expire.
func (h *Held) Session() context.Context { return h.session }

// Context is cancelled when the slot can no longer be trusted: the session
// ends (its guard fires at last_acknowledged_send + TTL - margin, before the
// server can expire the lease), the view sees the key deleted, or the slot
// is released. context.Cause says which (session.ErrGuardExpired,
// session.ErrLeaseGone, ErrLost, ErrReleased, errGoneUnanswered, ...). A
// run executes under it.
func (h *Held) Context() context.Context { return h.ctx }

// Key is the job slot key.
func (h *Held) Key() string { return h.keys[0] }

// Released is the revision at which Release applied: the writes it carried
// are at it. 0 until then, and when the release's answer was lost and read
// back (applied, at a revision unknown).
func (h *Held) Released() int64 { return h.released }

// IsOwner is true while the job slot key is still this claim's incarnation.
// Add it to any transaction that must only apply while the slot is held.
func (h *Held) IsOwner() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(h.keys[0]), "=", h.Token)
}

// ownerCmps guard every key of the claim, so a release never deletes a
// resource slot that a newer claim created under the same name.
func (h *Held) ownerCmps() []clientv3.Cmp {
	cmps := make([]clientv3.Cmp, len(h.keys))
	for i, k := range h.keys {
		cmps[i] = clientv3.Compare(clientv3.CreateRevision(k), "=", h.Token)
	}
	return cmps
}

// track lets the view end the holder's context when one of its keys is
// deleted under it. A delete the view applied before track ran would never
// reach the holder: so a key the view has followed past the claim's
// revision (it applied the claim's put) but that does not show this
// incarnation is gone already, deleted or taken anew.
func (s *Semaphore) track(h *Held) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.goneLocked(h) {
		s.lostLocked(h)
		return
	}
	for _, k := range h.keys {
		s.held[k] = h
	}
}

// goneLocked reports whether the view shows a key of h no longer holding
// h's incarnation: the view has applied the claim's revision on that key's
// prefix, and the key is missing or was created anew since.
func (s *Semaphore) goneLocked(h *Held) bool {
	for i, k := range h.keys {
		view := slotsView // keys[0] is the job slot
		if i > 0 {
			view = resourcesView
		}
		if e, ok := s.entries[k]; s.seen[view] >= h.Token && (!ok || e.token != h.Token) {
			return true
		}
	}
	return false
}

// lostLocked ends a claim whose key the view saw deleted. While a Release
// call runs, that call tells whether the delete was its own (deleted).
// Releasing with no call running, a send of the release went unanswered
// and its caller gave up: the delete is most likely that send's, applied
// late. The claim ends then, not as lost (errGoneUnanswered), so a caller
// that tries the release again reads back what it was (refusedBack), and
// one that gave up for good leaves nothing behind in held.
func (s *Semaphore) lostLocked(h *Held) {
	switch {
	case h.releasing && h.inRelease:
		h.deleted = true
		return
	case h.releasing:
		s.finishLocked(h, errGoneUnanswered)
		return
	}
	s.logger.Warn("slot lost", "job", h.Job, "slot", h.Slot, "token", h.Token, "run_id", h.Value.RunID)
	s.finishLocked(h, ErrLost)
}

func (s *Semaphore) finishLocked(h *Held, cause error) {
	for _, k := range h.keys {
		if s.held[k] == h {
			delete(s.held, k)
		}
	}
	h.cancel(cause)
}

func (s *Semaphore) finish(h *Held, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finishLocked(h, cause)
}
