package leader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/pruned"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Before the prune deletes a job's records, the stretches of its ticks
// (pruned/<job>, package jobs/pruned) cover theirs
// (docs/design-leader.md#backfill-never-reruns-a-tick): a backfill reads
// the records and the stretches at one revision, so a tick it finds with
// no record is in a stretch if its record was ever pruned, and is not
// queued again. A stretch runs on over the records kept next to the deleted
// ones, so a steady job writes it about once in history_limit runs, not at
// every round. The term keeps what it read and wrote (the leader is the
// only writer, fenced, beside the removed jobs' cleanup, which a compare of
// the key's revision keeps from losing an update).

// stretchesOf is a job's stretches as the term last read or wrote them.
type stretchesOf struct {
	s   pruned.Stretches
	rev int64 // pruned/<job>'s ModRevision; 0: absent
	// unreadable: the value does not decode. The job's records are then
	// kept (a delete could not be covered) and the key read again next
	// round, until an operator mends it.
	unreadable bool
}

// errStretchesMoved: another writer changed a job's stretches since the
// term read them; the round is tried again, from a fresh read.
var errStretchesMoved = errors.New("leader: pruned stretches changed meanwhile")

// coverPruned writes, for each history, stretches that cover the ticks of
// the records it is to delete, where the job's do not yet; a job whose
// stretches cannot be read keeps its records.
func (p *pruner) coverPruned(ctx context.Context, hs []historyOf) error {
	if err := p.loadStretches(ctx, hs); err != nil {
		return err
	}
	var jobs []string
	grown := map[string]pruned.Stretches{}
	for i := range hs {
		h := &hs[i]
		if p.stretches[h.job].unreadable {
			clear(h.old)
			h.oldTicks = nil
			delete(p.stretches, h.job)
			continue
		}
		cur, deleted := p.stretches[h.job].s, p.ticksOf(*h, true)
		if cur.CoversAll(deleted) {
			continue // the steady round: the kept records' ticks are not parsed
		}
		s, _ := cur.Grow(p.nextTick(h.job), deleted, p.ticksOf(*h, false))
		jobs, grown[h.job] = append(jobs, h.job), s
	}
	// Batches of distinct jobs, inFlight at once; mu guards p.stretches
	// meanwhile.
	var mu sync.Mutex
	return eachBatchInFlight(ctx, len(jobs), maxOpsPerTxn/2, func(ctx context.Context, _, lo, hi int) error {
		return p.putStretches(ctx, jobs[lo:hi], grown, &mu)
	})
}

// putStretches writes the stretches of jobs, each compared to be as the
// term knows it, in one fenced transaction; mu guards p.stretches.
func (p *pruner) putStretches(ctx context.Context, jobs []string, grown map[string]pruned.Stretches, mu *sync.Mutex) error {
	cmps := []clientv3.Cmp{p.fence}
	ops := make([]clientv3.Op, 0, len(jobs))
	mu.Lock()
	for _, job := range jobs {
		key := p.d.Keys.Pruned(job)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", p.stretches[job].rev))
		ops = append(ops, clientv3.OpPut(key, grown[job].Encode()))
	}
	mu.Unlock()
	tr, err := p.d.Client.Txn(ctx).If(cmps...).Then(ops...).Else(clientv3.OpGet(p.term.Key)).Commit()
	mu.Lock()
	defer mu.Unlock()
	switch {
	case err != nil:
		for _, job := range jobs {
			delete(p.stretches, job) // written or not: read again
		}
		return fmt.Errorf("leader: write pruned stretches: %w", err)
	case !tr.Succeeded && p.fenceGone(tr):
		return errNotLeader
	case !tr.Succeeded:
		for _, job := range jobs {
			delete(p.stretches, job)
		}
		return errStretchesMoved
	}
	for _, job := range jobs {
		p.stretches[job] = stretchesOf{s: grown[job], rev: tr.Header.Revision}
	}
	return nil
}

// loadStretches reads the stretches of the histories' jobs the term has
// not read yet, many jobs a transaction.
func (p *pruner) loadStretches(ctx context.Context, hs []historyOf) error {
	if p.stretches == nil {
		p.stretches = map[string]stretchesOf{}
	}
	var jobs []string
	for _, h := range hs {
		if _, ok := p.stretches[h.job]; !ok {
			jobs = append(jobs, h.job)
		}
	}
	for len(jobs) > 0 {
		batch := jobs[:min(len(jobs), maxOpsPerTxn)]
		jobs = jobs[len(batch):]
		ops := make([]clientv3.Op, len(batch))
		for i, job := range batch {
			ops[i] = clientv3.OpGet(p.d.Keys.Pruned(job))
		}
		resp, err := p.d.Client.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return fmt.Errorf("leader: read pruned stretches: %w", err)
		}
		for i, job := range batch {
			var st stretchesOf
			if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
				st.rev = kvs[0].ModRevision
				if st.s, err = pruned.Decode(kvs[0].Value); err != nil {
					p.d.Log.Warn("pruned stretches cannot be read: the job's history is not pruned, and a backfill of it queues no tick, until the key is mended "+
						"(deleting it forgets which ticks' records were pruned: a backfill may run them again)",
						"job", job, "key", string(kvs[0].Key), "err", err)
					st.unreadable = true
				}
			}
			p.stretches[job] = st
		}
	}
	return nil
}

// ticksOf are the ticks of h's records to delete and of its chunk
// records' ticks to take out (deleted), or of those kept (scheduled and
// backfilled runs; a manual, keyed or chained run has none).
func (p *pruner) ticksOf(h historyOf, deleted bool) []time.Time {
	var out []time.Time
	for _, kv := range h.records {
		if _, old := h.old[string(kv.Key)]; old != deleted {
			continue
		}
		if at, ok := runs.ScheduledAtOf(p.d.Keys.RecordRun(string(kv.Key))); ok {
			out = append(out, at)
		}
	}
	takenOut := map[string]bool{}
	for _, t := range h.oldTicks {
		takenOut[t.Record.RunID] = true
	}
	for _, t := range h.ticks {
		if takenOut[t.Record.RunID] == deleted {
			out = append(out, t.Record.ScheduledAt)
		}
	}
	return out
}

// nextTick is the job's schedule as the term knows it; nil for a job gone
// from the config or without a schedule.
func (p *pruner) nextTick(job string) func(time.Time) time.Time {
	j, _ := p.job(job)
	if j == nil {
		return nil
	}
	sched, err := j.ParsedSchedule()
	if err != nil {
		return nil
	}
	return sched.Next
}

// purgeCover is what a removed job's cleanup (removed.go) adds to its
// transaction so that the ticks of the records it deletes, and chunked
// (its ticks it takes out of chunk records), stay covered: a compare that
// no record was written since they were read, and the put of the job's
// stretches with one more from the earliest to the latest of them (the
// job has no schedule any more to tell gaps by), compared to be as read.
func (b *base) purgeCover(ctx context.Context, job string, chunked []time.Time) ([]clientv3.Cmp, []clientv3.Op, error) {
	k := b.d.Keys
	resp, err := b.d.Client.Txn(ctx).Then(
		clientv3.OpGet(k.JobRuns(job), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(k.Pruned(job)),
	).Commit()
	if err != nil {
		return nil, nil, fmt.Errorf("leader: read the records of removed job %s: %w", job, err)
	}
	ticks := slices.Clone(chunked)
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		if at, ok := runs.ScheduledAtOf(k.RecordRun(string(kv.Key))); ok {
			ticks = append(ticks, at)
		}
	}
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k.JobRuns(job)).WithPrefix(), "<", resp.Header.Revision+1)}
	if len(ticks) == 0 {
		return cmps, nil, nil
	}
	var cur pruned.Stretches
	var rev int64
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		rev = kvs[0].ModRevision
		if cur, err = pruned.Decode(kvs[0].Value); err != nil {
			return nil, nil, fmt.Errorf("removed job %s: its history is kept until its pruned stretches are mended: %w", job, err)
		}
	}
	cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k.Pruned(job)), "=", rev))
	grown, changed := cur.Grow(nil, ticks, nil)
	if !changed {
		return cmps, nil, nil
	}
	return cmps, []clientv3.Op{clientv3.OpPut(k.Pruned(job), grown.Encode())}, nil
}
