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

// eachInFlight calls send(ctx, i) for each i in [0, n), up to inFlight at
// once, and returns the first error; the others' ctx then ends. The sends
// must be independent: no order among them is kept.
func eachInFlight(ctx context.Context, n int, send func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	for i := range n {
		g.Go(func() error { return send(gctx, i) })
	}
	return g.Wait()
}
