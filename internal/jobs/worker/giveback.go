package worker

import (
	"context"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/metrics"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/slots"
)

// A claimed run that does not begin is given back, in the transaction that
// releases its slot, rather than recorded: it did not run, so a record
// would say more than happened.

// giveBack releases a claim whose run would begin more than
// slots.MaxStartLatency after the start its rate places were stamped with
// (a slow claim round trip, a paused process): the window's bound relies
// on no run beginning later than that, so the run does not begin. The
// entry goes back to pending, unchanged, in the release transaction; the
// places stay stamped, so the window admits fewer, never more.
func (c *core) giveBack(q *queue.Item, held *slots.Held, stamped time.Time, log *slog.Logger) error {
	err := c.settle(held, log, func(ctx context.Context) error {
		return c.d.Slots.Release(ctx, held, clientv3.OpPut(q.Key, q.Entry.Encode()))
	})
	c.d.Metrics.ClaimFails.WithLabelValues(metrics.ClaimLate).Inc()
	log.Warn("run given back: it would begin too long after its rate stamp", "stamped", stamped, "err", err)
	return err
}

// handBackUnstarted releases the slot of a run that did not start because
// its slot could no longer be trusted when it was due (untilStart: the
// session's guard passed, or its lease is gone), and gives the run back in
// the same transaction: a queued run's entry goes back to pending,
// unchanged; an assigned run takes the queue path as a pending entry, as
// one refused at its claim does (queueAssigned), if it has no entry and no
// record. Recorded lost, it would read as a run that may have started
// (docs/design.md#the-safety-rules, rule 5). The release is owner-checked:
// applied, the slot was still this run's, so nobody else ran the tick, and
// it runs once, later, wherever the queue path claims it (within its
// starting deadline; missed after). Refused (the lease, and the slot with
// it, gone), the run is the leader's to decide, as any run whose worker
// vanished is. A strict retry's entry, which names the slot it holds, is
// not given back (execute records it lost).
func (c *core) handBackUnstarted(q *queue.Item, held *slots.Held, cause error, log *slog.Logger) error {
	op := clientv3.OpPut(q.Key, q.Entry.Encode())
	if q.Key == "" {
		e := q.Entry
		key := c.d.Keys.Entry(e.Job, e.RunID)
		op = clientv3.OpTxn([]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(c.d.Keys.Record(e.Job, e.RunID)), "=", 0),
		}, []clientv3.Op{clientv3.OpPut(key, e.Encode())}, nil)
	}
	err := c.settle(held, log, func(ctx context.Context) error {
		return c.d.Slots.Release(ctx, held, op)
	})
	c.d.Metrics.ClaimFails.WithLabelValues(metrics.ClaimUntrusted).Inc()
	if err != nil {
		log.Warn("run not started: its slot could not be trusted when it was due, nor released: the leader decides it", "cause", cause, "err", err)
		return err
	}
	log.Warn("run not started: its slot could not be trusted when it was due; given back to the queue", "cause", cause)
	return nil
}
