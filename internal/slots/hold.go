package slots

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// Strict retries (retries.hold_slot): a failed attempt keeps its slot keys
// for its retry instead of deleting them, and the retry claims with them.
// The keys stay on the holder's session lease, so a holder that dies loses
// them as it loses any slot (docs/design.md#the-safety-rules, rule 7), and the retry then claims like
// any run.

// ErrHoldLost: the kept slot is gone (its lease ended) or was never ours;
// the run claims afresh.
var ErrHoldLost = errors.New("slots: held slot lost")

// Keep ends the claim's run but not its slot: then (the record and the
// retry's entry) is applied only while every key is still this claim's
// incarnation (rule 4) and witness, the key the claim wrote its run's
// running state to, is as the claim left it (ModRevision h.Claimed); the
// keys stay and the claim's context ends. Only the holder writes witness
// while the keys are its (the leader's reaper records a run only once its
// slot is gone), so witness changed under keys still held means a keep
// applied. A keep whose answer was lost may apply later still (a group
// commit sends on after its caller gave up): it is read back, sent again
// (the compare lets one apply), and never said not to have applied, so
// the caller does not follow it with a release
// (docs/design.md#the-safety-rules, rule 7). ErrNotOwner: the keys are
// gone (the keep may have applied; nothing more may be written).
// ErrIndeterminate: not known yet; Keep can be called again. Any other
// error: no keep of h was sent that could apply. A release of h whose
// answer was lost may still apply, after a keep too: once one was sent,
// Keep sends nothing and errs, so the caller releases again (one way). A
// claim's calls of Keep and Release must not overlap.
func (s *Semaphore) Keep(ctx context.Context, h *Held, witness string, then ...clientv3.Op) error {
	if h.releaseUnanswered {
		return fmt.Errorf("slots: keep %s slot %d token %d: a release of the claim was sent and may apply: not kept", h.Job, h.Slot, h.Token)
	}
	cmps := append(h.ownerCmps(), clientv3.Compare(clientv3.ModRevision(witness), "=", h.Claimed))
	retry := etcdRetry.Start()
	for {
		resp, err := s.commit.Commit(ctx, txnbatch.Txn{If: cmps, Then: then})
		switch {
		case err == nil && resp.Succeeded:
			s.finish(h, ErrReleased)
			s.logger.Debug("slot kept for the retry", "job", h.Job, "slot", h.Slot, "token", h.Token, "run_id", h.Value.RunID)
			return nil
		case err == nil: // refused: read why
		case !h.keepUnanswered && errors.Is(err, txnbatch.ErrNotSent):
			return fmt.Errorf("slots: keep %s slot %d token %d: %w", h.Job, h.Slot, h.Token, notSent(ctx, err))
		case !h.keepUnanswered && definite(err):
			return fmt.Errorf("slots: keep %s slot %d token %d: %w", h.Job, h.Slot, h.Token, err)
		case !errors.Is(err, txnbatch.ErrNotSent) && !definite(err):
			h.keepUnanswered = true
			s.logger.Warn("keep outcome unknown; reading back", "job", h.Job, "slot", h.Slot, "token", h.Token, "err", err)
		}
		kept, err := s.keptBack(ctx, h, witness)
		switch {
		case err != nil:
			return err
		case kept && !h.keepUnanswered:
			// No keep of h was unanswered, yet witness changed: the
			// caller broke the contract above. Not kept; it releases.
			s.logger.Error("the run's entry changed under its claim; not keeping the slot", "job", h.Job, "key", witness, "token", h.Token)
			return fmt.Errorf("slots: keep %s slot %d token %d: %s changed under the claim: not kept", h.Job, h.Slot, h.Token, witness)
		case kept:
			s.finish(h, ErrReleased)
			s.logger.Info("a keep whose answer was lost had applied", "job", h.Job, "slot", h.Slot, "token", h.Token, "run_id", h.Value.RunID)
			return nil
		}
		if !retry.Wait(ctx, s.clock) {
			return fmt.Errorf("slots: keep %s slot %d token %d: %w: %w", h.Job, h.Slot, h.Token, ErrIndeterminate, context.Cause(ctx))
		}
	}
}

// keptBack tells whether a keep applied: true once witness changed while
// the keys are still h's; false with a nil error while witness is as the
// claim left it, so the keep can be sent again. Like a claim's read-back
// it goes on after ctx ends, until the holder's session does: the keep may
// have applied, and walking away would leave the caller to guess.
func (s *Semaphore) keptBack(ctx context.Context, h *Held, witness string) (bool, error) {
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	defer context.AfterFunc(h.Session(), func() { cancel(context.Cause(h.Session())) })()
	retry := etcdRetry.Start()
	for {
		resp, err := s.client.Txn(rctx).If(h.ownerCmps()...).Then(clientv3.OpGet(witness, clientv3.WithKeysOnly())).Commit()
		switch {
		case err == nil && !resp.Succeeded:
			s.finish(h, ErrLost)
			return false, fmt.Errorf("slots: keep %s slot %d token %d: %w", h.Job, h.Slot, h.Token, ErrNotOwner)
		case err == nil:
			kvs := resp.Responses[0].GetResponseRange().Kvs
			return len(kvs) == 0 || kvs[0].ModRevision != h.Claimed, nil
		}
		if rctx.Err() != nil || !retry.Wait(rctx, s.clock) {
			return false, fmt.Errorf("slots: keep %s slot %d token %d: %w: %w", h.Job, h.Slot, h.Token, ErrIndeterminate, errors.Join(context.Cause(rctx), err))
		}
	}
}

// ClaimHeld claims req with the slot a previous attempt kept (job slot
// index slot, resource slots res, all created at token on this session's
// lease), taking rate places and applying req's If and Then as Claim does.
// ErrHoldLost when the keys are no longer ours. When the outcome is
// unknown the kept keys are deleted (owner-checked), so whatever happened
// ends as a released slot: a lost run the reaper records, or a pending
// retry that claims afresh.
func (s *Semaphore) ClaimHeld(ctx context.Context, sess *session.Session, req Request, slot int, token int64, res []HeldResource) (*Held, error) {
	if err := req.check(); err != nil {
		return nil, err
	}
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}

	kept := s.keptKeys(req.group(), slot, res)
	ours := make([]clientv3.Cmp, 0, 2*len(kept))
	for _, k := range kept {
		ours = append(ours,
			clientv3.Compare(clientv3.CreateRevision(k), "=", token),
			clientv3.Compare(clientv3.LeaseValue(k), "=", sess.Lease()))
	}
	places := s.placesFromView()
	for range maxAttempts {
		rp, err := s.pickRates(req.Rates, req.Start, places)
		if err != nil {
			return nil, fmt.Errorf("slots: claim held %s: %w", req.Job, err)
		}
		resp, err := s.commit.Commit(ctx, s.claimHeldTxn(req, slot, ours, rp))
		if err != nil {
			s.dropHold(context.WithoutCancel(ctx), kept, token)
			return nil, fmt.Errorf("slots: claim held %s run %s: %w: %w", req.Job, req.Value.RunID, ErrIndeterminate, err)
		}
		if !resp.Succeeded {
			return nil, fmt.Errorf("slots: claim held %s run %s: %w", req.Job, req.Value.RunID, ErrConflict)
		}
		hold := resp.Responses[0].GetResponseTxn()
		if !hold.Succeeded {
			return nil, fmt.Errorf("slots: claim held %s run %s slot %d token %d: %w", req.Job, req.Value.RunID, slot, token, ErrHoldLost)
		}
		inner := hold.Responses[0].GetResponseTxn()
		if inner.Succeeded {
			h := newHeld(sess, req.Job, slot, token, res, kept, req.Value)
			h.Claimed = resp.Header.Revision // the entry's put; the keys' is token
			s.track(h)
			return h, nil
		}
		var got []*mvccpb.KeyValue
		for _, r := range inner.Responses {
			got = append(got, r.GetResponseRange().Kvs...)
		}
		places = placesFromRead(got)
	}
	return nil, fmt.Errorf("slots: claim held %s: lost the race for a rate place %d times: %w", req.Job, maxAttempts, ErrFull)
}

// claimHeldTxn is the transaction of ClaimHeld, in three levels so each
// failure is told apart: the caller's compares, the hold still ours (ours),
// the rate places rp as judged; the last reads the windows when it fails.
func (s *Semaphore) claimHeldTxn(req Request, slot int, ours []clientv3.Cmp, rp []ratePick) txnbatch.Txn {
	rateCmps, rateThen := rateOps(rp, stamp{At: req.Start.UTC(), RunID: req.Value.RunID, Holder: req.Value.Holder})
	then := rateThen
	if req.ThenFor != nil {
		then = append(then, req.ThenFor(slot)...)
	}
	var why []clientv3.Op
	for _, r := range req.Rates {
		why = append(why, clientv3.OpGet(s.layout.RateWindow(r.Scope, r.Name), clientv3.WithPrefix()))
	}
	return txnbatch.Txn{If: req.If, Then: []clientv3.Op{
		clientv3.OpTxn(ours, []clientv3.Op{clientv3.OpTxn(rateCmps, then, why)}, nil)}}
}

// dropHold deletes kept keys that are still the hold's incarnation.
func (s *Semaphore) dropHold(ctx context.Context, kept []string, token int64) {
	if err := s.dropKeys(ctx, kept, token); err != nil {
		s.logger.Warn("dropping a held slot failed; it ends with the session", "key", kept[0], "token", token, "err", err)
	}
}

// Kept names the keys a strict retry's hold keeps: its job's (or
// concurrency key's) slot and its resource slots, created at Token.
type Kept struct {
	Job, Key  string
	Slot      int
	Token     int64
	Resources []HeldResource
}

// DropKept deletes the keys of a hold whose retry no longer needs them
// (cancelled, or claimed afresh by another worker while the holder lived):
// else they would take a place until the holder's session ends, which for
// a live replica is never. Only keys still created at k.Token go, so a
// slot claimed since by anyone is left alone; dropping twice is harmless.
func (s *Semaphore) DropKept(ctx context.Context, k Kept) error {
	kept := s.keptKeys(keys.SlotGroup(k.Job, k.Key), k.Slot, k.Resources)
	if err := s.dropKeys(ctx, kept, k.Token); err != nil {
		return fmt.Errorf("slots: drop the slot %s kept for its retry (token %d): %w", kept[0], k.Token, err)
	}
	return nil
}

// Holds reports whether the view shows k's job slot still created at
// k.Token: the hold lives, and its holder claims the retry or gives the
// slot up. It waits for the view to be read (waitReady); false when ctx
// ends first.
func (s *Semaphore) Holds(ctx context.Context, k Kept) bool {
	if s.waitReady(ctx) != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[s.layout.Slot(keys.SlotGroup(k.Job, k.Key), k.Slot)]
	return ok && e.token == k.Token
}

// keptKeys are a hold's keys: slot of the job slot group (the job, or
// "<job>/<key>"), then its resource slots res.
func (s *Semaphore) keptKeys(group string, slot int, res []HeldResource) []string {
	kept := []string{s.layout.Slot(group, slot)}
	for _, r := range res {
		kept = append(kept, s.layout.ResourceSlot(r.Name, r.Index))
	}
	return kept
}

func (s *Semaphore) dropKeys(ctx context.Context, kept []string, token int64) error {
	cmps := make([]clientv3.Cmp, len(kept))
	ops := make([]clientv3.Op, len(kept))
	for i, k := range kept {
		cmps[i] = clientv3.Compare(clientv3.CreateRevision(k), "=", token)
		ops[i] = clientv3.OpDelete(k)
	}
	_, err := s.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
	return err
}
