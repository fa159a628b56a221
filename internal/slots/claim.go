package slots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// maxAttempts bounds how often a claim retries after losing the race for the
// indexes it picked; each retry picks from a fresh, consistent read.
const maxAttempts = 8

// Resource is a shared semaphore a job names, with its cluster-wide limit.
type Resource struct {
	Name  string
	Limit int
}

// Request says what to claim.
type Request struct {
	Job            string
	MaxConcurrency int
	Resources      []Resource
	// Value is stored in every claimed key; Value.RunID is required, since
	// it is how a claim whose response was lost is recognised.
	Value Value
	// If and ThenFor are the caller's compares and operations, applied in
	// the claim's transaction: the engine checks that the queue entry is as
	// it saw it and rewrites it as running, with the job slot index the
	// claim picked (ThenFor's slot), so the run is marked running exactly
	// when it gets its slot (docs/design.md#the-safety-rules, rule 3).
	If      []clientv3.Cmp
	ThenFor func(slot int) []clientv3.Op
	// Key is the run's concurrency key: MaxConcurrency then holds per key
	// (slots/<job>/<key>/<i>).
	Key string
	// Rates are the windows the run needs a place in, judged at Start and
	// stamped with it: the run must not begin before Start nor later than
	// Start + MaxStartLatency.
	Rates []Rate
	Start time.Time
	// Confirm makes a refusal etcd's: when the view shows no room, the
	// keys are read from etcd before the claim gives up, so a caller that
	// acts on the refusal for good (a skip) does not act on a view that
	// has not yet seen a slot freed. Without it a refusal may come from
	// the view alone (FullError.View), which costs no round trip.
	Confirm bool
}

// group is the name the job slot keys are grouped under.
func (r *Request) group() string { return keys.SlotGroup(r.Job, r.Key) }

func (r *Request) check() error {
	if r.Job == "" || r.MaxConcurrency < 1 || r.Value.RunID == "" {
		return fmt.Errorf("slots: claim needs a job, max concurrency >= 1 and a run id, got %q, %d, %q", r.Job, r.MaxConcurrency, r.Value.RunID)
	}
	seen := map[string]bool{}
	for _, res := range r.Resources {
		if res.Name == "" || res.Limit < 1 || seen[res.Name] {
			return fmt.Errorf("slots: claim %s: resource %q with limit %d is empty, unlimited or repeated", r.Job, res.Name, res.Limit)
		}
		seen[res.Name] = true
	}
	for _, rt := range r.Rates {
		if rt.Name == "" || rt.Count < 1 || rt.Per <= 0 || r.Start.IsZero() {
			return fmt.Errorf("slots: claim %s: rate window %s needs a count, a period and the run's start", r.Job, rt.Window())
		}
	}
	return nil
}

// Claim takes a free slot of the job and one of each resource, with the
// caller's If and Then, in one transaction: all or nothing. Free indexes come
// from the view, starting at a random one so that contending workers spread
// out; when another worker took one first, the failed transaction returns a
// fresh read of the job's and resources' keys and the claim retries from it.
//
// Errors: ErrFull when the job or a resource has no free slot (by the view
// at first, then by the transaction's read; wait on Changed and retry),
// ErrConflict when the caller's If failed. When the response is lost, the
// keys are read back (their value holds the run id) for as long as the
// session lives; a slot found held is returned even if ctx ended meanwhile,
// because the caller's Then was applied with it.
func (s *Semaphore) Claim(ctx context.Context, sess *session.Session, req Request) (*Held, error) {
	value, err := s.claimable(ctx, sess, req)
	if err != nil {
		return nil, err
	}
	var start time.Time
	defer s.observeClaim(&start)
	free := s.freeFromView(req)
	places := s.placesFromView()
	fromView := true
	for range maxAttempts {
		p, err := free.pick()
		var rp []ratePick
		if err == nil {
			rp, err = s.pickRates(req.Rates, req.Start, places)
		}
		if err != nil {
			var full *FullError
			if fromView && errors.As(err, &full) {
				if req.Confirm {
					if free, places, err = s.readRoom(ctx, req); err != nil {
						return nil, fmt.Errorf("slots: claim %s: confirm a refusal: %w", req.Job, err)
					}
					fromView = false
					continue
				}
				full.View = true
			}
			return nil, fmt.Errorf("slots: claim %s: %w", req.Job, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		if start.IsZero() {
			start = time.Now()
		}
		keys, txn := s.claimTxn(sess, req, p, rp, value)
		resp, err := s.commit.Commit(ctx, txn)
		if err != nil {
			if h, err := s.claimUnanswered(ctx, sess, req, p, err); err != nil || h != nil {
				return h, err
			}
			free = s.freeFromView(req)
			continue
		}
		if !resp.Succeeded {
			return nil, fmt.Errorf("slots: claim %s run %s: %w", req.Job, req.Value.RunID, ErrConflict)
		}
		inner := resp.Responses[0].GetResponseTxn()
		if inner.Succeeded {
			return s.claimed(sess, req, p, keys, resp.Header.Revision), nil
		}
		free, places = s.roomFromRead(req, inner.Responses)
		fromView = false
	}
	return nil, fmt.Errorf("slots: claim %s: lost the race for a free slot %d times: %w", req.Job, maxAttempts, ErrFull)
}

// observeClaim records how long a claim took, if it reached etcd (*start
// set): a refusal by the view takes microseconds and would hide the
// latency that matters.
func (s *Semaphore) observeClaim(start *time.Time) {
	if !start.IsZero() {
		s.metrics.claimDuration.Observe(time.Since(*start).Seconds())
	}
}

// claimed tracks the slot a claim's transaction took at revision token.
func (s *Semaphore) claimed(sess *session.Session, req Request, p pick, keys []string, token int64) *Held {
	h := newHeld(sess, req.Job, p.slot, token, p.resources(req), keys, req.Value)
	s.track(h)
	s.logger.Debug("slot claimed", "job", req.Job, "slot", p.slot, "token", h.Token, "run_id", req.Value.RunID)
	return h
}

// claimable checks that req can be claimed now and returns the value its
// slot keys will hold.
func (s *Semaphore) claimable(ctx context.Context, sess *session.Session, req Request) ([]byte, error) {
	if err := req.check(); err != nil {
		return nil, err
	}
	if err := sess.Err(); err != nil {
		return nil, fmt.Errorf("slots: claim %s: session ended: %w", req.Job, err)
	}
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	return req.Value.Encode(), nil
}

// claimTxn is the transaction that claims pick p and the rate places rp:
// each slot key created under the session's lease and each place stamped,
// if all are free, with the caller's Then; the keys are the slot keys.
func (s *Semaphore) claimTxn(sess *session.Session, req Request, p pick, rp []ratePick, value []byte) ([]string, txnbatch.Txn) {
	keys := p.keys(s.layout, req)
	slotCmps := make([]clientv3.Cmp, len(keys))
	then := make([]clientv3.Op, 0, len(keys))
	for i, k := range keys {
		slotCmps[i] = clientv3.Compare(clientv3.CreateRevision(k), "=", 0)
		then = append(then, clientv3.OpPut(k, string(value), clientv3.WithLease(sess.Lease())))
	}
	rateCmps, rateThen := rateOps(rp, stamp{At: req.Start.UTC(), RunID: req.Value.RunID, Holder: req.Value.Holder})
	slotCmps = append(slotCmps, rateCmps...)
	then = append(then, rateThen...)
	if req.ThenFor != nil {
		then = append(then, req.ThenFor(p.slot)...)
	}
	// Else reads what holds the job's and resources' slots, so a lost
	// race costs no extra round trip to refresh.
	why := s.roomOps(req)
	// The caller's compares come first and alone in the outer
	// transaction, so its failure is told apart from a taken slot. It
	// may share a commit with other claims and releases, each nested
	// with its own compares (package txnbatch).
	return keys, txnbatch.Txn{If: req.If, Then: []clientv3.Op{clientv3.OpTxn(slotCmps, then, why)}}
}

// claimUnanswered resolves a claim's commit that failed: an error when it
// was not applied or cannot have been, the slot when the read-back finds it
// ours, and neither when it was not applied and the claim may try again.
func (s *Semaphore) claimUnanswered(ctx context.Context, sess *session.Session, req Request, p pick, err error) (*Held, error) {
	if errors.Is(err, txnbatch.ErrNotSent) {
		return nil, notSent(ctx, err)
	}
	if definite(err) {
		return nil, fmt.Errorf("slots: claim %s: %w", req.Job, err)
	}
	s.logger.Warn("claim outcome unknown; reading back", "job", req.Job, "slot", p.slot, "run_id", req.Value.RunID, "err", err)
	return s.readBack(ctx, sess, req, p)
}

// readBack resolves a claim whose response was lost: the job slot key holds
// our run id under our lease exactly when the transaction was applied. It
// keeps trying after ctx ends (the caller's Then may have been applied, so
// walking away could strand a queue entry's run) until the session ends;
// from then on anything we might hold is bound to a lease the server will
// expire, and the loss is visible as a slot gone without a run record.
func (s *Semaphore) readBack(ctx context.Context, sess *session.Session, req Request, p pick) (*Held, error) {
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	stop := context.AfterFunc(sess.Context(), func() { cancel(context.Cause(sess.Context())) })
	defer stop()
	keys := p.keys(s.layout, req)
	gets := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		gets[i] = clientv3.OpGet(k)
	}
	retry := etcdRetry.Start()
	for {
		resp, err := s.client.Txn(rctx).Then(gets...).Commit()
		if err == nil {
			return s.heldFromRead(sess, req, p, keys, resp)
		}
		if rctx.Err() != nil || definite(err) {
			return nil, fmt.Errorf("slots: claim %s run %s: %w: %w", req.Job, req.Value.RunID, ErrIndeterminate, errors.Join(context.Cause(rctx), err))
		}
		s.logger.Warn("reading back a claim failed; retrying", "job", req.Job, "run_id", req.Value.RunID, "err", err)
		if !retry.Wait(rctx, s.clock) {
			return nil, fmt.Errorf("slots: claim %s run %s: %w: %w", req.Job, req.Value.RunID, ErrIndeterminate, context.Cause(rctx))
		}
	}
}

func (s *Semaphore) heldFromRead(sess *session.Session, req Request, p pick, keys []string, resp *clientv3.TxnResponse) (*Held, error) {
	var token int64
	for i, r := range resp.Responses {
		kvs := r.GetResponseRange().Kvs
		var v Value
		if len(kvs) == 1 {
			_ = json.Unmarshal(kvs[0].Value, &v)
		}
		mine := len(kvs) == 1 && clientv3.LeaseID(kvs[0].Lease) == sess.Lease() && v.RunID == req.Value.RunID
		switch {
		case i == 0 && !mine:
			return nil, nil // not applied: the keys are free or someone else's
		case i == 0:
			token = kvs[0].CreateRevision
		case !mine || kvs[0].CreateRevision != token:
			// One transaction wrote them all; anything else is a bug to surface.
			return nil, fmt.Errorf("slots: claim %s run %s: read back job slot %d with token %d but not resource key %s", req.Job, req.Value.RunID, p.slot, token, keys[i])
		}
	}
	h := newHeld(sess, req.Job, p.slot, token, p.resources(req), keys, req.Value)
	s.track(h)
	s.logger.Info("claim read back as applied", "job", req.Job, "slot", p.slot, "token", token, "run_id", req.Value.RunID)
	return h, nil
}

// notSent is the error of a transaction the committer did not send: the
// cause of the caller's context, or the committer's closing.
func notSent(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// definite reports whether err means the server refused the request, so it
// was certainly not applied; anything else (timeouts, unavailability, the
// context ending) leaves the outcome unknown.
func definite(err error) bool {
	code := status.Code(err)
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	}
	switch code {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.NotFound, codes.AlreadyExists,
		codes.PermissionDenied, codes.Unauthenticated, codes.ResourceExhausted, codes.OutOfRange:
		return true
	}
	return false
}
