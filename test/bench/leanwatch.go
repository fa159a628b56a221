package main

import (
	"context"
	"sync"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// leanWatched are the lean floor's prefixes a replica follows: every
// worker's assignments and claim markers (a backup's take-overs), and the
// jobs' state, where the cursors are. A step with watchers has each
// worker's client follow them, as a replica's one client does, so that
// what the watches cost etcd is measured apart from the transactions.
var leanWatched = []string{leanPrefix + "assign/", leanPrefix + "claimed/", leanPrefix + "jobs/"}

// leanWatchers follow leanWatched on each client until stop is called,
// counting the events delivered.
type leanWatchers struct {
	events atomic.Int64
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// watchLean opens the watches, from the revision after the one etcd is at
// (rev), so that each delivers only what the step writes.
func watchLean(ctx context.Context, clis []*clientv3.Client, rev int64) *leanWatchers {
	wctx, cancel := context.WithCancel(ctx)
	lw := &leanWatchers{cancel: cancel}
	for _, cli := range clis {
		for _, prefix := range leanWatched {
			wch := cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
			lw.wg.Go(func() {
				for resp := range wch {
					lw.events.Add(int64(len(resp.Events)))
				}
			})
		}
	}
	return lw
}

// stop ends the watches and waits for their goroutines; it returns the
// events they were delivered.
func (lw *leanWatchers) stop() int64 {
	if lw == nil {
		return 0
	}
	lw.cancel()
	lw.wg.Wait()
	return lw.events.Load()
}
