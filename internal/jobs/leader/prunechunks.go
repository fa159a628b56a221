package leader

import (
	"context"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/shed"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A job's ticks in chunk records (docs/design-shed.md, "Retention") are
// more of its unstarted records: the prune counts them against
// skipped_history_limit by their chunk record's create revision
// (beyondLimits), covers those beyond it in the job's pruned stretches as a
// record's (coverPruned), then takes them out. The replica's index
// (Deps.Chunks) has them by job, as a chunk record's key names no job; a
// tick the index has not seen yet is neither counted nor a kept tick a
// stretch runs over, which is safe: the prune deletes less, a stretch stops
// short. A chunk record holds ticks of many jobs. Those of one round go out
// together: a record left with none is deleted, one with ticks left is
// rewritten without them (its create revision, which orders the ticks
// left, stays), each compared to be as the index read it. One that changed
// meanwhile is left for a later round. In a steady overload the ticks of an
// instant age alike, so a round deletes whole records, about one operation
// for 40 ticks.

// takeOutTicks takes each history's oldTicks out of their chunk records,
// many records a fenced transaction; when a compare failed, each record
// alone. The batches touch distinct records: inFlight go at once.
func (p *pruner) takeOutTicks(ctx context.Context, hs []historyOf) error {
	edits := p.chunkEdits(hs)
	return eachBatchInFlight(ctx, len(edits), maxOpsPerTxn-1, func(ctx context.Context, _, lo, hi int) error {
		batch := edits[lo:hi]
		ok, err := p.fenced(ctx, cmpsOf(batch), opsOf(batch)...)
		if ok || err != nil {
			return err
		}
		for _, e := range batch {
			if _, err := p.fenced(ctx, cmpsOf([]chunkEdit{e}), opsOf([]chunkEdit{e})...); err != nil {
				return err
			}
		}
		return nil
	})
}

// chunkEdit is a chunk record as the index read it and what it is to
// hold once the prune's ticks are out (no ticks: deleted).
type chunkEdit struct {
	key  string
	rev  int64
	left runs.ChunkRecord
}

// chunkEdits groups the ticks to take out by chunk record, in key order.
func (p *pruner) chunkEdits(hs []historyOf) []chunkEdit {
	var ticks []shed.Tick
	for _, h := range hs {
		ticks = append(ticks, h.oldTicks...)
	}
	edits, _ := editsOf(p.d.Chunks, ticks)
	return edits
}

// editsOf groups ticks by chunk record, in key order, each record as the
// index holds it less those ticks. A record the index holds at another
// revision than a tick of it was read at changed meanwhile: it is left
// out, and counted in stale.
func editsOf(index *shed.Index, ticks []shed.Tick) (edits []chunkEdit, stale int) {
	byKey := map[string][]shed.Tick{}
	for _, t := range ticks {
		byKey[t.Key] = append(byKey[t.Key], t)
	}
	for key, ticks := range byKey {
		c, ok := index.Get(key)
		jobs := map[string]bool{}
		for _, t := range ticks {
			ok = ok && t.Rev == c.Rev
			jobs[t.Record.Job] = true
		}
		if !ok {
			stale++
			continue
		}
		edits = append(edits, chunkEdit{key: key, rev: c.Rev, left: c.Without(jobs)})
	}
	slices.SortFunc(edits, func(a, b chunkEdit) int { return strings.Compare(a.key, b.key) })
	return edits, stale
}

// cmpsOf compares each edit's record to be as read.
func cmpsOf(edits []chunkEdit) []clientv3.Cmp {
	out := make([]clientv3.Cmp, len(edits))
	for i, e := range edits {
		out[i] = clientv3.Compare(clientv3.ModRevision(e.key), "=", e.rev)
	}
	return out
}

// opsOf deletes or rewrites each edit's record.
func opsOf(edits []chunkEdit) []clientv3.Op {
	out := make([]clientv3.Op, len(edits))
	for i, e := range edits {
		if len(e.left.Runs) == 0 {
			out[i] = clientv3.OpDelete(e.key)
		} else {
			out[i] = clientv3.OpPut(e.key, runs.EncodeChunkRecord(&e.left))
		}
	}
	return out
}
