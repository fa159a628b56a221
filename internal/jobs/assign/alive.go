package assign

import (
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
)

// A worker is an incarnation of a replica (keys.Incarnation: its id on one
// session lease): it is alive while members/<id> exists on that lease. A
// replica that moved to a new session is a new worker, and its old
// incarnation is dead though the replica lives: the runs the old one
// claimed may have started, so they are recorded lost, not claimed again by
// the new one under the same attempt. A worker named by a bare replica id
// (the library's tests) is alive while its member key exists.

// memberKey is the member key whose life is worker'p.
func (p *protocol) memberKey(worker string) string {
	if id, _, ok := keys.ParseIncarnation(worker); ok {
		return p.keys.Member(id)
	}
	return p.keys.Member(worker)
}

// alive tells, from a read of worker's member key, whether worker lives.
func (p *protocol) alive(worker string, kvs []*mvccpb.KeyValue) bool {
	if len(kvs) == 0 {
		return false
	}
	if _, lease, ok := keys.ParseIncarnation(worker); ok {
		return kvs[0].Lease == lease
	}
	return true
}

// gone is the compare that worker is dead: its member key is absent or on
// another lease (etcd compares an absent key's lease as 0).
func (p *protocol) gone(worker string) clientv3.Cmp {
	if _, lease, ok := keys.ParseIncarnation(worker); ok {
		return clientv3.Compare(clientv3.LeaseValue(p.memberKey(worker)), "!=", lease)
	}
	return clientv3.Compare(clientv3.CreateRevision(p.memberKey(worker)), "=", 0)
}

// living is the compare that worker is alive (its member key on its lease): gone's opposite
// (for a bare replica id, its member key exists).
func (p *protocol) living(worker string) clientv3.Cmp {
	if _, lease, ok := keys.ParseIncarnation(worker); ok {
		return clientv3.Compare(clientv3.LeaseValue(p.memberKey(worker)), "=", lease)
	}
	return clientv3.Compare(clientv3.CreateRevision(p.memberKey(worker)), ">", 0)
}
