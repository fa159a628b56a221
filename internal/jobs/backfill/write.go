package backfill

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
)

// maxNested is the most entries one request writes: each a nested
// transaction, beside the spec's put, under etcd's default --max-txn-ops
// of 128.
const maxNested = 100

// write puts entries, many per request, each in a nested transaction
// If(no record, no entry) Then(put the entry): of two backfills that both
// found a tick free, one writes it. It returns the run ids written and
// those another writer had created first. Requests already committed stay
// when a later one fails: a repeated backfill finds their ticks existing.
func (b *Backfiller) write(ctx context.Context, entries []*queue.Entry) (written, existing []string, err error) {
	for len(entries) > 0 {
		chunk := entries[:min(len(entries), maxNested)]
		entries = entries[len(chunk):]
		ops := make([]clientv3.Op, 0, 1+len(chunk))
		for _, e := range chunk {
			if op, ok := e.SpecOp(b.keys); ok {
				ops = append(ops, op)
			}
		}
		ops = queue.DedupSpecs(b.keys, ops)
		specs := len(ops)
		for _, e := range chunk {
			entry, record := b.keys.Entry(e.Job, e.RunID), b.keys.Record(e.Job, e.RunID)
			ops = append(ops, clientv3.OpTxn(
				[]clientv3.Cmp{
					clientv3.Compare(clientv3.CreateRevision(record), "=", 0),
					clientv3.Compare(clientv3.CreateRevision(entry), "=", 0),
				},
				[]clientv3.Op{clientv3.OpPut(entry, e.Encode())},
				nil))
		}
		resp, err := b.kv.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return written, existing, fmt.Errorf("backfill: write runs of job %s: %w", chunk[0].Job, err)
		}
		for i, e := range chunk {
			if resp.Responses[specs+i].GetResponseTxn().GetSucceeded() {
				written = append(written, e.RunID)
			} else {
				existing = append(existing, e.RunID)
			}
		}
	}
	return written, existing, nil
}

// writeAll writes the entries, a sharded job's tick by tick as its shards
// (queue.AddShards), any other's many a transaction (write).
func (b *Backfiller) writeAll(ctx context.Context, entries []*queue.Entry) (written, existing []string, err error) {
	if len(entries) == 0 || !entries[0].Spec.Sharded() {
		return b.write(ctx, entries)
	}
	for _, e := range entries {
		created, err := queue.AddShards(ctx, b.kv, b.keys, e)
		if err != nil {
			return written, existing, fmt.Errorf("backfill: %w", err)
		}
		if created {
			written = append(written, e.RunID)
		} else {
			existing = append(existing, e.RunID)
		}
	}
	return written, existing, nil
}
