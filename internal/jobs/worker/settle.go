package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/etcdsched/scheduler/internal/backoff"
	"github.com/etcdsched/scheduler/internal/slots"
)

// A run's end is applied by one transaction (its release with its record,
// or the keep of a strict retry). When that transaction fails and the
// worker's session lives on, nothing else would ever apply it: the slot
// keys stay on a lease that is kept alive, the running entry still matches
// its slot, so the leader's reaper sees a live run, and every later claim
// of the job (or of its concurrency key) finds the slot taken, for as long
// as the replica runs. A keyed job with max_concurrency 1 then skipped
// every tick ("all 1 slots taken and 1 runs already queued") after a fault
// had made one release time out. So the end is tried again until etcd
// answers it, the slot is found lost, or the session ends (its lease then
// expires, and the reaper records the run lost: docs/design.md#the-safety-rules, rule 7).

// settleRetry spaces the retries of a run's end: 100ms, a transaction
// being cheap to repeat and the slot held meanwhile, up to 2s, well inside
// the smallest session TTL; half of each delay random, so the runs a fault
// failed together do not write again together.
var settleRetry = backoff.Policy{Min: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: 0.5}

// settle applies end until it succeeds or cannot matter any more. Each
// attempt is bounded by the session TTL. Retries stop when the slot is
// lost (slots.ErrNotOwner, or the view saw its keys deleted outside a
// release: slots.ErrLost; a delete after a release whose answer was lost
// ends the claim otherwise, and the next attempt reads back whether that
// release applied), when the session that holds it ends, or once the
// shutdown grace is over (the drain's last attempt is its only one; the
// revoke that follows frees the slot).
func (c *core) settle(held *slots.Held, log *slog.Logger, end func(ctx context.Context) error) error {
	ttl := c.d.Config().Cluster.SessionTTL.D()
	b := settleRetry.Start()
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer context.AfterFunc(c.abandon, cancel)()
	defer context.AfterFunc(held.Session(), cancel)()
	for {
		ctx, cancelAttempt := context.WithTimeout(context.Background(), ttl)
		sent := c.d.Clock.Now()
		err := end(ctx)
		cancelAttempt()
		c.ended(c.d.Clock.Since(sent))
		if err == nil || errors.Is(err, slots.ErrNotOwner) || errors.Is(context.Cause(held.Context()), slots.ErrLost) {
			return err
		}
		if stop.Err() != nil {
			return err
		}
		log.Warn("the run's end was not applied; trying again while the session lives", "err", err, "in", b.Delay())
		if !b.Wait(stop, c.d.Clock) {
			return err
		}
	}
}
