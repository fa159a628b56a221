package leader

import (
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
)

// max_runs (docs/configuration.md#jobs): a job stops ticking after that many
// scheduled runs, counted exactly across leaders. The count is a key of
// its own (keys.Scheduled), written in every transaction that materializes,
// assigns or withdraws the job's ticks, and those transactions all compare
// the job's cursor as this leader knows it: so a leader whose cursor is
// current knows the count too (both are read together at the start of a
// term and after a failed compare), and the count needs no compare of its
// own. A handoff cannot lose or add a count: the count moves in the very
// transaction that makes the ticks exist or go. Counted are ticks that
// become runs (queued or assigned), not ticks recorded missed. The count
// starts when max_runs is set: ticks materialized before (at most one
// lookahead) are not counted.

// limitRuns cuts p after the job's last run that max_runs allows: its
// cursor is then that tick. With none left, p holds no tick and its
// cursor stays: the caller moves the cursor with the clock (exhausted).
func (c *cursorBook) limitRuns(j *config.Job, p plan) plan {
	if j.MaxRuns <= 0 {
		return p
	}
	left := c.runsLeft(j)
	for i, t := range p.Ticks {
		if t.Action != queueTick {
			continue
		}
		if left == 0 {
			p.Ticks = p.Ticks[:i]
			if i > 0 {
				p.Cursor = p.Ticks[i-1].At
			}
			return p
		}
		left--
	}
	return p
}

// runsLeft is how many scheduled runs max_runs still allows j.
func (c *cursorBook) runsLeft(j *config.Job) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(0, j.MaxRuns-c.counts[j.Name])
}

// exhausted reports whether j has had all its max_runs.
func (c *cursorBook) exhausted(j *config.Job) bool { return j.MaxRuns > 0 && c.runsLeft(j) == 0 }

// countOps is the write that moves j's count by delta, for the
// transaction that moves its cursor; none for a job without max_runs.
func (c *cursorBook) countOps(j *config.Job, delta int) []clientv3.Op {
	if j == nil || j.MaxRuns <= 0 || delta == 0 {
		return nil
	}
	c.mu.Lock()
	n := max(0, c.counts[j.Name]+delta)
	c.mu.Unlock()
	return []clientv3.Op{clientv3.OpPut(c.keys.Scheduled(j.Name), strconv.Itoa(n))}
}

// counted applies delta to j's count once its transaction applied.
func (c *cursorBook) counted(j *config.Job, delta int) {
	if j == nil || j.MaxRuns <= 0 || delta == 0 {
		return
	}
	c.mu.Lock()
	c.counts[j.Name] = max(0, c.counts[j.Name]+delta)
	c.mu.Unlock()
}

// runTicks is how many of ticks become runs.
func runTicks(ticks []plannedTick) int {
	n := 0
	for _, t := range ticks {
		if t.Action == queueTick {
			n++
		}
	}
	return n
}
