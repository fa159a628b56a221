package leader

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// inFlight is how many of a prune round's transactions of one kind (its
// history reads, its stretches' writes, its deletes, its chunk records'
// take-outs) are sent at once. Each is cheap for etcd but waits its turn
// behind the runs' commits: under a load of 4,000 jobs a second a read of
// 16 jobs' histories answered in about 0.3 s, and a round of every job,
// sent a transaction at a time, took 72 s to read and 39 more to write
// while the histories grew past their limits (docs/design-leader.md,
// History).
const inFlight = 8

// eachBatchInFlight cuts [0, n) into batches of per, the last shorter, and
// calls send(ctx, i, lo, hi) for the i-th batch [lo, hi), up to inFlight
// at once; it returns the first error, and the others' ctx then ends. The
// sends must be independent: no order among them is kept.
func eachBatchInFlight(ctx context.Context, n, per int, send func(ctx context.Context, i, lo, hi int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	for i := range (n + per - 1) / per {
		g.Go(func() error { return send(gctx, i, i*per, min(n, (i+1)*per)) })
	}
	return g.Wait()
}
