package leader

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// writeShards materializes tick t of the sharded job j (docs/design-sharded.md):
// its shard entries, a part a transaction (queue.FanOutParts), each part
// fenced and comparing the job's cursor unchanged, and the cursor moved
// only with the last part. A leader that dies between parts leaves the
// cursor before the tick: its successor writes the parts never applied
// (shardParts).
func (tw *tickWriter) writeShards(ctx context.Context, cfg *config.Config, j *config.Job, t plannedTick, now time.Time) error {
	runID := runs.ID(j.Name, t.At)
	entry := queue.NewEntry(runID, j, cfg.Resources, t.At, t.NotBefore, 1, runs.Schedule)
	entry.CatchUp = t.CatchUp
	if err := entry.RenderKey(); err != nil {
		// Recorded skipped under the tick's id, as an unsharded tick is.
		_, ops, health := tw.tickOps(cfg, j, t, now)
		_, err := tw.write(ctx, j.Name, t.At, tw.absent(j.Name, runID), append(ops, health...))
		return err
	}
	parts, err := tw.shardParts(ctx, entry)
	if err != nil {
		return err
	}
	var last []clientv3.Op
	if len(parts) > 0 {
		parts, last = parts[:len(parts)-1], parts[len(parts)-1]
	}
	for _, part := range parts {
		if err := tw.writePart(ctx, j.Name, part); err != nil {
			return err
		}
	}
	n := runTicks([]plannedTick{t})
	wrote, err := tw.write(ctx, j.Name, t.At, nil, append(last, tw.cursors.countOps(j, n)...))
	if err != nil {
		return err
	}
	if wrote {
		tw.countTick(j.Name, t)
		tw.cursors.counted(j, n)
	}
	return nil
}

// shardParts are the writes of tick's fan-out, a transaction each: every
// part when it has not begun. A tick an earlier leader began and died
// between its parts gets only the parts never applied
// (queue.ReadFanOut): a shard of an applied part that ended and whose
// record was pruned since (a tick of more shards than history_limit) must
// not be written again, which each shard's guard (no entry, no record)
// alone would let happen. None when it fanned in, or when which parts were
// applied cannot be known: the tick then stays unfinished, which a shard
// run twice would be worse than.
func (tw *tickWriter) shardParts(ctx context.Context, tick *queue.Entry) ([][]clientv3.Op, error) {
	st, err := queue.ReadFanOut(ctx, tw.d.Client, tw.d.Keys, tick)
	if err != nil {
		return nil, fmt.Errorf("leader: %w", err)
	}
	if !st.Begun {
		return queue.FanOutParts(tw.d.Keys, tick.ShardEntries()), nil
	}
	return st.Missing, nil
}

// fannedOut reports whether a fan-out of the tick at was begun (its fan-in
// key exists): a tick this leader would record missed, whose shards an
// earlier leader began to queue before it died, is queued in full instead,
// so that its shards all exist, are recorded (missed, by their deadline)
// and fan in. A failed read counts as not begun (the write that follows
// fails too, and the next pass looks again).
func (tw *tickWriter) fannedOut(ctx context.Context, job string, at time.Time) bool {
	resp, err := tw.d.Client.Get(ctx, tw.d.Keys.FanIn(job, runs.ID(job, at)), clientv3.WithCountOnly())
	return err == nil && resp.Count > 0
}

// writePart writes one part of a tick's shards if this leader still leads
// and the job's cursor is as it knows it.
func (tw *tickWriter) writePart(ctx context.Context, job string, ops []clientv3.Op) error {
	known, ok := tw.cursors.get(job)
	resp, err := tw.d.Client.Txn(ctx).If(tw.fence, tw.cursors.is(job, known, ok)).Then(ops...).
		Else(clientv3.OpGet(tw.term.Key), clientv3.OpGet(tw.d.Keys.Cursor(job))).Commit()
	if err != nil {
		return fmt.Errorf("leader: materialize shards of %s: %w", job, err)
	}
	if resp.Succeeded {
		return nil
	}
	if tw.fenceGone(resp) {
		return errNotLeader
	}
	// Another term moved the cursor: plan again from what is stored.
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		if stored, err := queue.DecodeCursor(kvs[0].Value); err == nil {
			tw.cursors.set(job, stored, true)
		}
	} else {
		tw.cursors.set(job, time.Time{}, false)
	}
	return errCursorMoved
}
