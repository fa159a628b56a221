package slots

import (
	"context"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// roomOps read what a claim of req needs room in: the keys of the job's
// (or key's) slots and of each resource's, keys only, then the places of
// each rate window with their stamps, to judge them afresh. A failed claim
// transaction returns them; a confirmed refusal reads them alone.
func (s *Semaphore) roomOps(req Request) []clientv3.Op {
	ops := []clientv3.Op{clientv3.OpGet(s.layout.JobSlots(req.group()), clientv3.WithPrefix(), clientv3.WithKeysOnly())}
	for _, r := range req.Resources {
		ops = append(ops, clientv3.OpGet(s.layout.Resource(r.Name), clientv3.WithPrefix(), clientv3.WithKeysOnly()))
	}
	for _, r := range req.Rates {
		ops = append(ops, clientv3.OpGet(s.layout.RateWindow(r.Scope, r.Name), clientv3.WithPrefix()))
	}
	return ops
}

// roomFromRead is the free slots and the windows' places in the answers
// to roomOps.
func (s *Semaphore) roomFromRead(req Request, rs []*etcdserverpb.ResponseOp) (freeSet, func(string) (place, bool)) {
	var kvs []*mvccpb.KeyValue
	for _, r := range rs[1+len(req.Resources):] {
		kvs = append(kvs, r.GetResponseRange().Kvs...)
	}
	return s.freeFromRead(req, rs), placesFromRead(kvs)
}

// readRoom reads from etcd (linearizably) the room a claim of req has: for
// a refusal the caller must not take from the view alone.
func (s *Semaphore) readRoom(ctx context.Context, req Request) (freeSet, func(string) (place, bool), error) {
	resp, err := s.client.Txn(ctx).Then(s.roomOps(req)...).Commit()
	if err != nil {
		return freeSet{}, nil, err
	}
	free, places := s.roomFromRead(req, resp.Responses)
	return free, places, nil
}
