package slots

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

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
// incarnation (rule 4), and the keys stay. The claim's context ends.
func (s *Semaphore) Keep(ctx context.Context, h *Held, then ...clientv3.Op) error {
	resp, err := s.commit.Commit(ctx, txnbatch.Txn{If: h.ownerCmps(), Then: then})
	switch {
	case err != nil:
		return fmt.Errorf("slots: keep %s slot %d token %d: %w", h.Job, h.Slot, h.Token, err)
	case !resp.Succeeded:
		s.finish(h, ErrLost)
		return fmt.Errorf("slots: keep %s slot %d token %d: %w", h.Job, h.Slot, h.Token, ErrNotOwner)
	}
	s.finish(h, ErrReleased)
	s.logger.Debug("slot kept for the retry", "job", h.Job, "slot", h.Slot, "token", h.Token, "run_id", h.Value.RunID)
	return nil
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

	kept := []string{s.layout.Slot(req.group(), slot)}
	for _, r := range res {
		kept = append(kept, s.layout.ResourceSlot(r.Name, r.Index))
	}
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
	cmps := make([]clientv3.Cmp, len(kept))
	ops := make([]clientv3.Op, len(kept))
	for i, k := range kept {
		cmps[i] = clientv3.Compare(clientv3.CreateRevision(k), "=", token)
		ops[i] = clientv3.OpDelete(k)
	}
	if _, err := s.client.Txn(ctx).If(cmps...).Then(ops...).Commit(); err != nil {
		s.logger.Warn("dropping a held slot failed; it ends with the session", "key", kept[0], "token", token, "err", err)
	}
}
