package leader

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/follow"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/schedule"
)

// Limits of one batched transaction, under etcd's default --max-txn-ops of
// 128 (it bounds the compares and the operations of each branch apart).
const (
	batchMaxCompares = 121
	batchMaxOps      = 100
	// batchMaxTicks: a job with more ticks in one pass (a long catch-up)
	// takes the one-job path.
	batchMaxTicks = 8
	// batchMaxNested is what etcd leaves the nested transactions of a
	// batch (follow.NestedDepth): a chained run and a health transition need
	// 2, a chained run recorded skipped more (its record, notifications and
	// chained runs); a tick whose writes need more takes the one-job path.
	batchMaxNested = 128 - batchMaxCompares
)

// batchItem is a job whose pass can share a transaction with other jobs':
// its ticks (on time, late, caught up or missed) and its new cursor. In the
// steady state that is one on-time tick per job; after a leader gap, or
// when the leader fell behind, a few missed or caught-up ones. Writing them
// many to a transaction makes materializing cost etcd a fraction of a
// revision per run instead of one (the benchmark's throughput scenario
// found the leader's one-transaction-per-tick the bound at ~1,000 runs/s,
// and a leader that fell behind wrote each missed tick alone, fell further
// behind, and halved the completed runs).
type batchItem struct {
	job   *config.Job
	sched schedule.Schedule
	known time.Time // the cursor as stored
	has   bool      // whether the job has a cursor (a new job has none)
	la    time.Duration
	plan  plan
	// writes are the ticks' writes (queue entries, missed records and
	// what those cause), and health the health transitions of the jobs
	// whose records they write (the job's, and a chained run's recorded
	// skipped), one a job, built once: counted when the batch is split,
	// sent when it is written. Health is apart because a transaction may
	// put a key once: writeBatch keeps one transition a job over items.
	writes []clientv3.Op
	health []clientv3.Op
	runIDs []string
}

// compares and ops are what the item adds to a batched transaction: the
// cursor compare and put, two compares per tick, and its writes. A missed
// record's notifications and chained runs are ops of their own; a chained
// run and the health transition are nested transactions, which etcd counts
// as one op here and bounds apart by what this transaction leaves
// (batchMaxNested) for their compares and ops.
func (it *batchItem) compares() int { return 1 + 2*len(it.plan.Ticks) }
func (it *batchItem) ops() int {
	n := 1 + len(it.writes) + len(it.health)
	if it.job.MaxRuns > 0 {
		n++ // the count of scheduled runs (maxruns.go)
	}
	return n
}

// batchable returns j's item when its pass can share a transaction; the
// other cases (paused, ticks to withdraw, ticks not recorded, a long
// catch-up, nothing to do) take the one-job path, which handles them in
// full.
func (l *leader) batchable(j *config.Job, now time.Time) (batchItem, bool) {
	sched, err := j.ParsedSchedule()
	if err != nil || j.Sharded() { // a sharded tick is written in parts (shards.go)
		return batchItem{}, false
	}
	cursor, known := l.cursors.get(j.Name) // zero when not known
	l.mu.Lock()
	sweep := l.sweep[j.Name]
	l.mu.Unlock()
	if sweep || l.d.Paused.Is(j.Name, j.Paused) || l.cursors.exhausted(j) {
		return batchItem{}, false
	}
	la := l.lookahead(sched, now, false)
	p := l.cursors.limitRuns(j, planTicks(j, sched, cursor, now, la))
	if p.Dropped > 0 || len(p.Ticks) == 0 || len(p.Ticks) > batchMaxTicks || !p.Cursor.Equal(p.Ticks[len(p.Ticks)-1].At) {
		return batchItem{}, false
	}
	it := batchItem{job: j, sched: sched, known: cursor, has: known, la: la, plan: p}
	cfg := l.d.Config()
	for _, t := range p.Ticks {
		runID, ops, h := l.ticks.tickOps(cfg, j, t, now)
		it.runIDs = append(it.runIDs, runID)
		it.writes = append(it.writes, ops...)
		it.health = follow.MergeHealth(it.health, h) // one transition a job: the last tick's
	}
	if it.ops() > batchMaxOps || follow.NestedDepth(it.writes) > batchMaxNested {
		return batchItem{}, false // many sinks or chains: alone, a tick a transaction
	}
	return it, true
}

// chunk is, for the tick writer, an item of j's first ticks that fit one transaction alone (a
// long pass's ticks, written many at a time), after the cursor as known,
// and how many ticks it holds.
func (tw *tickWriter) chunk(j *config.Job, cfg *config.Config, ticks []plannedTick, now, known time.Time, has bool) (batchItem, int) {
	it := batchItem{job: j, known: known, has: has}
	for n, t := range ticks {
		runID, ops, h := tw.tickOps(cfg, j, t, now)
		h = follow.MergeHealth(it.health, h)
		// The fence, the cursor, two per tick; the cursor's put, the
		// writes and one health transition.
		if 2+2*(n+1) > batchMaxCompares || 1+len(it.writes)+len(ops)+len(h) > batchMaxOps || follow.NestedDepth(ops) > batchMaxNested {
			break
		}
		it.runIDs = append(it.runIDs, runID)
		it.writes = append(it.writes, ops...)
		it.plan.Ticks = append(it.plan.Ticks, t)
		it.health = h
	}
	if n := len(it.plan.Ticks); n > 0 {
		it.plan.Cursor = it.plan.Ticks[n-1].At
	}
	return it, len(it.plan.Ticks)
}

// writeBatch materializes every item's ticks in one transaction carrying,
// for every item and tick, exactly the conditions of the one-job writes
// (docs/design.md#the-safety-rules, rule 2: cursor as known, no queue entry, no record) and the leader
// fence (rule 1): all are written or none. ok is false when a condition
// other than the fence failed; the caller then takes the jobs one by one,
// which finds out which and why.
func (tw *tickWriter) writeBatch(ctx context.Context, items []batchItem) (ok bool, err error) {
	cmps := []clientv3.Cmp{tw.fence}
	var ops, health []clientv3.Op
	for _, it := range items {
		name := it.job.Name
		cmps = append(cmps, tw.cursors.is(name, it.known, it.has))
		for _, runID := range it.runIDs {
			cmps = append(cmps, tw.absent(name, runID)...)
		}
		ops = append(ops, it.writes...)
		health = follow.MergeHealth(health, it.health)
		ops = append(ops, clientv3.OpPut(tw.d.Keys.Cursor(name), queue.EncodeCursor(it.plan.Cursor)))
		ops = append(ops, tw.cursors.countOps(it.job, runTicks(it.plan.Ticks))...)
	}
	ops = queue.DedupSpecs(tw.d.Keys, append(ops, health...))
	resp, err := tw.d.Client.Txn(ctx).If(cmps...).Then(ops...).Else(clientv3.OpGet(tw.term.Key)).Commit()
	if err != nil {
		return false, fmt.Errorf("leader: materialize %d jobs: %w", len(items), err)
	}
	if !resp.Succeeded {
		if tw.fenceGone(resp) {
			return false, errNotLeader
		}
		return false, nil
	}
	tw.book.wrote(ops)
	for _, it := range items {
		tw.cursors.forward(it.job.Name, it.plan.Cursor)
		tw.cursors.counted(it.job, runTicks(it.plan.Ticks))
		for _, t := range it.plan.Ticks {
			tw.countTick(it.job.Name, t)
		}
	}
	return true, nil
}

// splitBatches separates the due jobs into batches that fit one
// transaction and the rest. A lone batchable job goes the one-job way.
func (l *leader) splitBatches(due []*config.Job, now time.Time) (batches [][]batchItem, single []*config.Job) {
	var cur []batchItem
	cmps, ops := 1, 0 // of cur; the fence is the first compare
	for _, j := range due {
		it, ok := l.batchable(j, now)
		if !ok {
			single = append(single, j)
			continue
		}
		if cmps+it.compares() > batchMaxCompares || ops+it.ops() > batchMaxOps {
			batches, cur, cmps, ops = append(batches, cur), nil, 1, 0
		}
		cur = append(cur, it)
		cmps, ops = cmps+it.compares(), ops+it.ops()
	}
	switch len(cur) {
	case 0:
	case 1:
		single = append(single, cur[0].job)
	default:
		batches = append(batches, cur)
	}
	return batches, single
}
