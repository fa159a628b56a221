package worker

import (
	"context"
	"errors"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/admission"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
)

// claim takes everything q needs to start (its job or key slot, a slot of
// each resource, a place in each rate window) and marks its entry running,
// in one transaction (docs/design.md#the-safety-rules, rule 3). The entry's new ModRevision is the
// slot's CreateRevision: the fencing token. The run's start, max(now,
// not_before), is what the rate windows count.
func (qr *queueRunner) claim(ctx context.Context, sess *session.Session, q *queue.Item, confirm bool) (*slots.Held, *queue.Entry, error) {
	started := qr.d.Clock.Now()
	if started.Before(q.NotBefore) {
		started = q.NotBefore
	}
	sent := qr.d.Clock.Now()
	res, rates := limits(q.Entry)
	// With the slot its previous attempt kept, on this session; else a
	// fresh slot, whose own token then fences the run (Entry.Running),
	// whatever kept slot the entry names.
	kept := qr.holdsFor(sess, q)
	running := func(slot int) *queue.Entry {
		if kept {
			return q.RunningHeld(qr.d.ID, started)
		}
		return q.Running(qr.d.ID, slot, started)
	}
	req := slots.Request{
		Job:            q.Job,
		Key:            q.ConcurrencyKey,
		MaxConcurrency: q.Spec.MaxConcurrency,
		Resources:      res,
		Rates:          rates,
		Start:          started,
		Confirm:        confirm,
		Value:          slots.Value{RunID: q.RunID, Holder: qr.d.ID, StartedAt: started.UTC(), ScheduledAt: q.ScheduledAt},
		If:             []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(q.Key), "=", q.ModRev)},
		ThenFor: func(slot int) []clientv3.Op {
			return []clientv3.Op{clientv3.OpPut(q.Key, running(slot).Encode())}
		},
	}
	var held *slots.Held
	var err error
	if kept {
		held, err = qr.d.Slots.ClaimHeld(ctx, sess, req, q.Hold.Slot, q.Hold.Token, heldResources(q.Hold))
		if errors.Is(err, slots.ErrHoldLost) {
			qr.d.Log.Info("kept slot lost; claiming afresh", "job", q.Job, "run_id", q.RunID)
			kept = false
			held, err = qr.d.Slots.Claim(ctx, sess, req)
		}
	} else {
		held, err = qr.d.Slots.Claim(ctx, sess, req)
	}
	// Only answers of etcd count: a refusal by the view (ErrFull) takes
	// microseconds and would pull the average down when etcd is slowest.
	if err == nil || errors.Is(err, slots.ErrConflict) {
		qr.rtt.observe(qr.d.Clock.Since(sent))
	}
	if err != nil {
		return nil, nil, err
	}
	return held, running(held.Slot), nil
}

// limits are the slots and windows a run of e takes besides its job slot
// (or its key's), as admission.Of describes them: a slot of each resource
// with a limit, a place in the job's window and in each resource's.
func limits(e *queue.Entry) ([]slots.Resource, []slots.Rate) {
	needs := admission.Of(&e.Spec, resourceDefs(e))
	var res []slots.Resource
	var rates []slots.Rate
	if r := needs.Rate; r != nil {
		rates = append(rates, slots.Rate{Scope: keys.RateJob, Name: e.Job, Count: r.Count, Per: r.Per.D()})
	}
	for _, r := range needs.Resources {
		if r.Limit > 0 {
			res = append(res, slots.Resource{Name: r.Name, Limit: r.Limit})
		}
		if r.Rate != nil {
			rates = append(rates, slots.Rate{Scope: keys.RateResource, Name: r.Name, Count: r.Rate.Count, Per: r.Rate.Per.D()})
		}
	}
	return res, rates
}

// resourceDefs are the resources e's spec carries, as the config defines
// them.
func resourceDefs(e *queue.Entry) []config.Resource {
	defs := make([]config.Resource, len(e.Resources))
	for i, r := range e.Resources {
		defs[i] = config.Resource{Name: r.Name, Limit: r.Limit, Rate: r.Rate}
	}
	return defs
}

// holdsFor reports whether q's retry waits on a slot this worker kept, on
// its current session.
func (qr *queueRunner) holdsFor(sess *session.Session, q *queue.Item) bool {
	return q.Hold != nil && q.Hold.Holder == qr.d.ID && q.Hold.Lease == int64(sess.Lease())
}

func heldResources(h *queue.Hold) []slots.HeldResource {
	out := make([]slots.HeldResource, len(h.Resources))
	for i, r := range h.Resources {
		out[i] = slots.HeldResource{Name: r.Name, Index: r.Index}
	}
	return out
}
