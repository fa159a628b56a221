package queue

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
)

// AddShards writes the shard entries of tick, a sharded job's entry made by
// NewEntry with its key rendered (a trigger, a backfilled tick), unless the
// tick exists: its fan-in key, or an entry or record under its own id. The
// first part decides and reports created; the later parts write the
// shards still missing, each guarded by its own absence. A tick that
// exists is completed when its fan-out was cut short (resumeShards): the
// caller of a trigger that failed between parts tries again, with the
// same idempotency key, and finds the tick whole. A later part that fails
// once the first applied (the caller's context ended: an API request's
// budget) is completed within FanOutGrace more (resumeShards), so that a
// trigger without a key, which cannot be tried again as the same tick,
// is not left unfinished by a slow etcd.
func AddShards(ctx context.Context, kv clientv3.KV, k keys.Layout, tick *Entry) (created bool, err error) {
	parts := FanOutParts(k, tick.ShardEntries())
	for i, part := range parts {
		txn := kv.Txn(ctx)
		if i == 0 {
			txn = txn.If(
				clientv3.Compare(clientv3.CreateRevision(k.FanIn(tick.Job, tick.RunID)), "=", 0),
				clientv3.Compare(clientv3.CreateRevision(k.Entry(tick.Job, tick.RunID)), "=", 0),
				clientv3.Compare(clientv3.CreateRevision(k.Record(tick.Job, tick.RunID)), "=", 0),
			)
		}
		resp, err := txn.Then(part...).Commit()
		if err != nil && i > 0 {
			gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FanOutGrace)
			defer cancel()
			if rerr := resumeShards(gctx, kv, k, tick); rerr != nil {
				return true, fmt.Errorf("queue: write shards %d.. of %s: %w (completing it: %w)", i*ShardPart, tick.RunID, err, rerr)
			}
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("queue: write shards of %s: %w", tick.RunID, err)
		}
		if !resp.Succeeded {
			return false, resumeShards(ctx, kv, k, tick)
		}
	}
	return true, nil
}

// FanOutGrace is how long a fan-out whose first part applied goes on
// after its caller's context ended.
const FanOutGrace = 5 * time.Second

// resumeShards completes tick's fan-out (resumeOnce) until it is whole, or
// cannot be completed, or ctx ends: a shard that ends between the read and
// the write (the fan-in changed) makes it read again.
func resumeShards(ctx context.Context, kv clientv3.KV, k keys.Layout, tick *Entry) error {
	for {
		again, err := resumeOnce(ctx, kv, k, tick)
		if err != nil || !again {
			return err
		}
	}
}

// resumeOnce writes the shards of tick that were never written; again says a
// shard ended while it did, so it must read again. A fan-out cut short
// between parts (its writer's etcd call timed out, or it died) leaves a tick
// that would never fan in. Only the parts its read proves were never
// applied are written (ReadFanOut), each comparing the fan-in unchanged since
// the read (no shard ended since) and each shard still absent.
func resumeOnce(ctx context.Context, kv clientv3.KV, k keys.Layout, tick *Entry) (again bool, err error) {
	st, err := ReadFanOut(ctx, kv, k, tick)
	if err != nil || !st.Pending {
		return false, err
	}
	unchanged := clientv3.Compare(clientv3.ModRevision(k.FanIn(tick.Job, tick.RunID)), "=", st.FanInRevision)
	for _, part := range st.Missing {
		resp, err := kv.Txn(ctx).If(unchanged).Then(part...).Commit()
		if err != nil {
			return false, fmt.Errorf("queue: write the missing shards of %s: %w", tick.RunID, err)
		}
		if !resp.Succeeded {
			return true, nil // a shard ended since the read
		}
	}
	return false, nil
}

// FanOut is what one read finds of a sharded tick's fan-out.
type FanOut struct {
	// Begun: the tick's fan-in key exists (the first part was applied).
	Begun bool
	// Pending: begun and not fanned in.
	Pending bool
	// FanInRevision is the fan-in key's ModRevision as read.
	FanInRevision int64
	// Missing are the writes of the parts never applied (missingParts),
	// a transaction each; none when every part was, or when that cannot
	// be known.
	Missing [][]clientv3.Op
}

// ReadFanOut reads the fan-in key of tick (a sharded job's tick, made by
// NewEntry) and its shards' entries and records at one revision: whether
// its fan-out began, and which of its parts were never applied.
func ReadFanOut(ctx context.Context, kv clientv3.KV, k keys.Layout, tick *Entry) (FanOut, error) {
	resp, err := kv.Txn(ctx).Then(
		clientv3.OpGet(k.FanIn(tick.Job, tick.RunID)),
		clientv3.OpGet(k.Entry(tick.Job, tick.RunID+"#"), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(k.Record(tick.Job, tick.RunID+"#"), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return FanOut{}, fmt.Errorf("queue: read the shards of %s: %w", tick.RunID, err)
	}
	f := resp.Responses[0].GetResponseRange().Kvs
	if len(f) == 0 {
		return FanOut{}, nil
	}
	st := FanOut{Begun: true, Pending: string(f[0].Value) == FanInPending, FanInRevision: f[0].ModRevision}
	if !st.Pending {
		return st, nil // fanned in
	}
	written := map[string]bool{} // queued or recorded
	ended := int64(0)            // recorded, no longer queued: a final end
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		written[k.RecordRun(string(kv.Key))] = true
	}
	for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
		if id := k.RecordRun(string(kv.Key)); !written[id] {
			written[id] = true
			ended++
		}
	}
	for _, part := range missingParts(tick.ShardEntries(), written, f[0].Version-1-ended) {
		st.Missing = append(st.Missing, shardPuts(k, part))
	}
	return st, nil
}

// missingParts are the parts of a fan-out never applied (partsOf), or none
// when that cannot be known. A part is applied whole (one
// transaction), and the first with the fan-in key, which exists: a part
// any of whose shards is written (queued or recorded) was applied, and its
// shards with neither ended and their records were pruned. pruned is how
// many final ends the fan-in counts with no record left; when those of
// applied parts are fewer, some part every shard of which ended and was
// pruned cannot be told from one never applied, and a shard written again
// after it ended would run twice: none is written.
func missingParts(shards []*Entry, written map[string]bool, pruned int64) [][]*Entry {
	var missing [][]*Entry
	for i, part := range partsOf(shards) {
		gone := int64(0)
		for _, s := range part {
			if !written[s.RunID] {
				gone++
			}
		}
		if i > 0 && gone == int64(len(part)) {
			missing = append(missing, part)
			continue
		}
		pruned -= gone
	}
	if pruned != 0 {
		return nil
	}
	return missing
}
