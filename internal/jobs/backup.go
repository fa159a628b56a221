package jobs

import (
	"sync/atomic"
	"time"
)

// claimLatency is a moving average of a worker's claim round trips. It
// moves two waits.
//
// A worker claims ClaimLead before a run is due, so that the claim's round
// trip is not part of the run's lateness. When etcd is busy the round trip
// is longer than that: the claim then starts earlier by three round trips
// (at most maxExtraLead more), and the target still starts at the due time.
// (test/bench, 1,000 runs/s: p99 lateness 64-98ms with it, 128-175ms
// without; a lead that followed the slowest round trips did no better.)
//
// A worker that is not first in line for a run waits Backup (per rank)
// before it claims too, in case the first one died. When etcd is
// saturated a claim takes longer than Backup, every backup fires while the
// first claim is still in flight, and each run costs three claim
// transactions, two of them doomed: they still go through raft, which
// saturates etcd further (in test/bench, at 1,250 runs/s offered, 960
// completed per second without this wait and 1,245 with it). Backups
// therefore also wait twice the claim round trip this worker sees, so that
// the first claim, and its watch event, land first. Safety depends on
// neither wait: the claim transaction decides.
type claimLatency struct{ avg atomic.Int64 } // nanoseconds

// claimLatencyWeight is the weight of each new sample, in 1/16ths.
const claimLatencyWeight = 2

// maxExtraLead caps what the round trips add to the claim lead; it stays
// well inside the leader's lookahead (2s), and a slot is held at most this
// much longer before its run starts.
const maxExtraLead = 500 * time.Millisecond

// maxBackupWait caps what the round trips add to a backup's wait: a run
// whose first worker died waits at most Backup + this per rank.
const maxBackupWait = 2 * time.Second

func (c *claimLatency) observe(d time.Duration) {
	for {
		old := c.avg.Load()
		next := old + (int64(d)-old)*claimLatencyWeight/16
		if c.avg.CompareAndSwap(old, next) {
			return
		}
	}
}

// extraLead is what a worker adds to ClaimLead: three average claim round
// trips, at most maxExtraLead.
func (c *claimLatency) extraLead() time.Duration {
	return min(3*time.Duration(c.avg.Load()), maxExtraLead)
}

// backupWait is what a backup adds to Backup per rank: twice the average
// claim round trip, at most maxBackupWait.
func (c *claimLatency) backupWait() time.Duration {
	return min(2*time.Duration(c.avg.Load()), maxBackupWait)
}
