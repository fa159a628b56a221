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
// shards still missing, each guarded by its own absence.
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
			return false, nil
		}
	}
	return true, nil
}
