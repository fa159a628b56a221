package slots

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// Release gives the claim's keys up and applies then (the run record) in the
// same transaction, only if every key is still this claim's incarnation
// (docs/design.md#the-safety-rules, rule 4): a holder that lost its slot while paused cannot delete the
// key a new holder created under the same name, nor write a record for a
// run that someone else now owns. ErrNotOwner says the slot was lost and
// then was not applied.
//
// When the response is lost the job slot key is read back: still ours means
// the release did not apply and it is sent again; gone while the lease lives
// means it applied; gone with the lease gone cannot be told apart from an
// expiry (ErrIndeterminate). Only a take-over of an unstarted run
// (assign.StealAhead) deletes the slot of a tracked claim on a live lease
// (DropKept and ClaimHeld delete only holds no claim tracks), and that
// run's release writes nothing: read back as applied, nothing is written
// twice.
// A send refused after one whose response was lost is read back the same
// way: that one may have applied since, and its delete refused this one
// (refusedBack). A claim's calls of Release and Keep must not overlap.
func (s *Semaphore) Release(ctx context.Context, h *Held, then ...clientv3.Op) error {
	_, err := s.release(ctx, h, then...)
	return err
}

// release is Release, with the transaction's response when it was read
// (nil when a lost response was read back as applied).
func (s *Semaphore) release(ctx context.Context, h *Held, then ...clientv3.Op) (*clientv3.TxnResponse, error) {
	s.mu.Lock()
	h.releasing, h.inRelease = true, true
	s.mu.Unlock()
	ops := make([]clientv3.Op, 0, len(h.keys)+len(then))
	for _, k := range h.keys {
		ops = append(ops, clientv3.OpDelete(k))
	}
	ops = append(ops, then...)
	retry := etcdRetry.Start()
	for {
		resp, err := s.commit.Commit(ctx, txnbatch.Txn{If: h.ownerCmps(), Then: ops})
		switch {
		case err == nil && resp.Succeeded:
			h.released = resp.Header.Revision
			s.finish(h, ErrReleased)
			if s.logger.Enabled(ctx, slog.LevelDebug) { // else its arguments cost a run three allocations
				s.logger.Debug("slot released", "job", h.Job, "slot", h.Slot, "token", h.Token, "run_id", h.Value.RunID)
			}
			return resp, nil
		case err == nil && !h.releaseUnanswered:
			s.finish(h, ErrLost)
			return nil, fmt.Errorf("slots: release %s slot %d token %d: %w", h.Job, h.Slot, h.Token, ErrNotOwner)
		case err == nil:
			return nil, s.refusedBack(ctx, h)
		case errors.Is(err, txnbatch.ErrNotSent):
			s.unrelease(h)
			return nil, fmt.Errorf("slots: release %s slot %d token %d: %w", h.Job, h.Slot, h.Token, notSent(ctx, err))
		case definite(err):
			s.unrelease(h)
			return nil, fmt.Errorf("slots: release %s slot %d token %d: %w", h.Job, h.Slot, h.Token, err)
		}
		h.releaseUnanswered = true
		s.logger.Warn("release outcome unknown; reading back", "job", h.Job, "slot", h.Slot, "token", h.Token, "err", err)
		released, err := s.releasedBack(ctx, h)
		switch {
		case err != nil:
			s.unrelease(h)
			return nil, err
		case released:
			s.finish(h, ErrReleased)
			return nil, nil
		}
		if !retry.Wait(ctx, s.clock) {
			s.unrelease(h)
			return nil, fmt.Errorf("slots: release %s slot %d token %d: %w", h.Job, h.Slot, h.Token, context.Cause(ctx))
		}
	}
}

// releasedBack tells whether a release whose response was lost was applied:
// false with a nil error means the key is still held and the release can be
// sent again. Like a claim's and a keep's read-back it goes on after ctx
// ends, until the holder's session does: a response is most often lost
// because ctx ended while etcd was slow, and a read under that ctx could
// not tell a release that applied, its record written, from a slot lost
// (CI, 12-02: runs that succeeded were logged as lost and left out of
// scheduler_runs_total).
func (s *Semaphore) releasedBack(ctx context.Context, h *Held) (bool, error) {
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	defer context.AfterFunc(h.Session(), func() { cancel(context.Cause(h.Session())) })()
	ctx = rctx
	retry := etcdRetry.Start()
	for {
		resp, err := s.client.Get(ctx, h.keys[0])
		if err == nil {
			if len(resp.Kvs) == 1 && resp.Kvs[0].CreateRevision == h.Token {
				return false, nil
			}
			ttl, err := s.client.TimeToLive(ctx, h.Lease)
			if err == nil {
				if ttl.TTL > 0 {
					return true, nil
				}
				s.finish(h, ErrLost)
				return false, fmt.Errorf("slots: release %s slot %d token %d: slot and lease gone: %w", h.Job, h.Slot, h.Token, ErrIndeterminate)
			}
		}
		if ctx.Err() != nil || !retry.Wait(ctx, s.clock) {
			return false, fmt.Errorf("slots: release %s slot %d token %d: %w: %w", h.Job, h.Slot, h.Token, ErrIndeterminate, errors.Join(context.Cause(ctx), err))
		}
	}
}

// refusedBack reads back a release refused after an earlier send of it
// went unanswered: that send may have applied since (a group commit sends
// on after its caller gave up; a read-back can overtake it), and its
// delete is then what the compare failed on. Gone while the lease lives,
// it applied; still held (a resource key gone), the claim was lost.
func (s *Semaphore) refusedBack(ctx context.Context, h *Held) error {
	released, err := s.releasedBack(ctx, h)
	switch {
	case err != nil:
		s.unrelease(h)
		return err
	case released:
		s.finish(h, ErrReleased)
		return nil
	}
	s.finish(h, ErrLost)
	return fmt.Errorf("slots: release %s slot %d token %d: %w", h.Job, h.Slot, h.Token, ErrNotOwner)
}

// unrelease ends a Release call that did not finish the claim. A release
// that certainly did not apply hands the claim back to the view's watch; a
// delete seen meanwhile was a loss. Once a send of it went unanswered the
// release may apply yet, and a delete the view sees may be its: the claim
// stays releasing, and a delete seen (now or later: lostLocked) ends it
// with errGoneUnanswered; a next Release reads back which it was
// (refusedBack).
func (s *Semaphore) unrelease(h *Held) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h.inRelease = false
	switch {
	case h.releaseUnanswered && h.deleted:
		s.finishLocked(h, errGoneUnanswered)
	case !h.releaseUnanswered:
		h.releasing = false
		if h.deleted {
			h.deleted = false
			s.lostLocked(h)
		}
	}
}
