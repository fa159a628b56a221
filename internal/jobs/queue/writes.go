package queue

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// Writes are the unfenced writes a worker or the API makes to the queue:
// each is decided by etcd against what its writer saw, so two replicas
// acting on one entry cannot both succeed.
type Writes struct {
	Client *clientv3.Client
	Keys   keys.Layout
	// Batch, when set, carries the per-run writes (IfUnchanged) beside
	// the replica's claims and releases, each with its own compare; nil
	// sends each alone.
	Batch *txnbatch.Committer
}

// IfUnchanged applies ops if the entry is still as the view saw it.
func (w Writes) IfUnchanged(ctx context.Context, it *Item, ops ...clientv3.Op) (bool, error) {
	unchanged := clientv3.Compare(clientv3.ModRevision(it.Key), "=", it.ModRev)
	var resp *clientv3.TxnResponse
	var err error
	if w.Batch != nil {
		resp, err = w.Batch.Commit(ctx, txnbatch.Txn{If: []clientv3.Cmp{unchanged}, Then: ops})
	} else {
		resp, err = w.Client.Txn(ctx).If(unchanged).Then(ops...).Commit()
	}
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

// Add creates a pending entry (made by NewEntry) and writes its spec,
// unless a run of that id is queued, running or recorded: it reports false
// then, and writes nothing. One transaction decides, so of two concurrent
// Adds of one id exactly one creates it.
func (w Writes) Add(ctx context.Context, e *Entry) (bool, error) {
	if e.Spec.Sharded() {
		return AddShards(ctx, w.Client, w.Keys, e)
	}
	key := w.Keys.Entry(e.Job, e.RunID)
	ops := []clientv3.Op{clientv3.OpPut(key, e.Encode())}
	if spec, ok := e.SpecOp(w.Keys); ok {
		ops = append([]clientv3.Op{spec}, ops...)
	}
	resp, err := w.Client.Txn(ctx).If(
		clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(w.Keys.Record(e.Job, e.RunID)), "=", 0),
	).Then(ops...).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

// RequestCancel asks the holder of runID to stop it. The request lives on
// the requester's session lease, so it cannot outlive the replica that made
// it by more than a TTL.
func (w Writes) RequestCancel(ctx context.Context, lease clientv3.LeaseID, runID, reason string) error {
	_, err := w.Client.Put(ctx, w.Keys.Cancel(runID), reason, clientv3.WithLease(lease))
	return err
}
