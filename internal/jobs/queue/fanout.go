package queue

import (
	"context"
	"fmt"

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
// same idempotency key, and finds the tick whole.
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
		if err != nil {
			return i > 0, fmt.Errorf("queue: write shards %d.. of %s: %w", i*ShardPart, tick.RunID, err)
		}
		if !resp.Succeeded {
			return false, resumeShards(ctx, kv, k, tick)
		}
	}
	return true, nil
}

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
// that would never fan in. It reads the tick's fan-in key and its shards'
// entries and records at one revision, and writes only when that read proves
// which shards were never written: the fan-in pending, and as many shards
// finally ended (a record and no entry) as the fan-in counts ends (its
// Version less the authorization's put), so no ended shard's record was
// pruned, and a shard with neither was never written. Each write compares
// the fan-in unchanged since the read (no shard ended since) and each shard
// still absent.
func resumeOnce(ctx context.Context, kv clientv3.KV, k keys.Layout, tick *Entry) (again bool, err error) {
	fanin := k.FanIn(tick.Job, tick.RunID)
	resp, err := kv.Txn(ctx).Then(
		clientv3.OpGet(fanin),
		clientv3.OpGet(k.Entry(tick.Job, tick.RunID+"#"), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(k.Record(tick.Job, tick.RunID+"#"), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
	).Commit()
	if err != nil {
		return false, fmt.Errorf("queue: read the shards of %s: %w", tick.RunID, err)
	}
	f := resp.Responses[0].GetResponseRange().Kvs
	if len(f) == 0 || string(f[0].Value) != FanInPending {
		return false, nil // fanned in, pruned, or never begun
	}
	queued := map[string]bool{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		queued[k.RecordRun(string(kv.Key))] = true
	}
	recorded := map[string]bool{}
	ended := int64(0)
	for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
		id := k.RecordRun(string(kv.Key))
		recorded[id] = true
		if !queued[id] {
			ended++
		}
	}
	if ended != f[0].Version-1 {
		return false, nil // an ended shard's record is gone: which shards were written is not known
	}
	var missing []*Entry
	for _, s := range tick.ShardEntries() {
		if !queued[s.RunID] && !recorded[s.RunID] {
			missing = append(missing, s)
		}
	}
	unchanged := clientv3.Compare(clientv3.ModRevision(fanin), "=", f[0].ModRevision)
	for i := 0; i < len(missing); i += ShardPart {
		part := shardPuts(k, missing[i:min(i+ShardPart, len(missing))])
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
