package worker

import (
	"context"
	"errors"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
)

// claim takes a slot for q and marks its entry running in one transaction
// (SPEC rule 3). The entry's new ModRevision is the slot's CreateRevision:
// the fencing token.
func (w *Worker) claim(ctx context.Context, sess *session.Session, q *queue.Item) (*slots.Held, *queue.Entry, error) {
	started := w.d.Clock.Now()
	if started.Before(q.NotBefore) {
		started = q.NotBefore
	}
	sent := w.d.Clock.Now()
	held, err := w.d.Slots.Claim(ctx, sess, slots.Request{
		Job:            q.Job,
		MaxConcurrency: q.Spec.MaxConcurrency,
		Resources:      slotResources(q.Entry),
		Value:          slots.Value{RunID: q.RunID, Holder: w.d.ID, StartedAt: started.UTC(), ScheduledAt: q.ScheduledAt},
		If:             []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(q.Key), "=", q.ModRev)},
		ThenFor: func(slot int) []clientv3.Op {
			return []clientv3.Op{clientv3.OpPut(q.Key, q.Running(w.d.ID, slot, started).Encode())}
		},
	})
	// Only answers of etcd count: a refusal by the view (ErrFull) takes
	// microseconds and would pull the average down when etcd is slowest.
	if err == nil || errors.Is(err, slots.ErrConflict) {
		w.claimRTT.observe(w.d.Clock.Since(sent))
	}
	if err != nil {
		return nil, nil, err
	}
	return held, q.Running(w.d.ID, held.Slot, started), nil
}

func slotResources(e *queue.Entry) []slots.Resource {
	out := make([]slots.Resource, len(e.Resources))
	for i, r := range e.Resources {
		out[i] = slots.Resource{Name: r.Name, Limit: r.Limit}
	}
	return out
}
