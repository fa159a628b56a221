package worker

import (
	"sync/atomic"
	"time"
)

// claimLatency is a moving average of a worker's claim round trips.
//
// A worker that is not first in line for a run waits Backup (per rank)
// before it claims too, in case the first one died. When etcd is
// saturated a claim takes longer than Backup, every backup fires while the
// first claim is still in flight, and each run costs three claim
// transactions, two of them doomed: they still go through raft, which
// saturates etcd further (in test/bench, at 1,250 runs/s offered, 960
// completed per second without this wait and 1,245 with it). Backups
// therefore also wait twice the claim round trip this worker sees, so that
// the first claim, and its watch event, land first. Safety does not depend
// on it: the claim transaction decides.
//
// The first worker's claim lead (ClaimLead) does not follow the round
// trips: a lead longer than the gap between two ticks of a job lets a
// worker with slower round trips claim the later tick before another
// claims the earlier one, which then finds the slot taken and is skipped
// (test/bench's failover jobs, every 100ms, lost 36 ticks that way).
type claimLatency struct{ avg atomic.Int64 } // nanoseconds

// claimLatencyWeight is the weight of each new sample, in 1/16ths.
const claimLatencyWeight = 2

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

// backupWait is what a backup adds to Backup per rank: twice the average
// claim round trip, at most maxBackupWait.
func (c *claimLatency) backupWait() time.Duration {
	return min(2*time.Duration(c.avg.Load()), maxBackupWait)
}
