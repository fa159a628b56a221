package assign

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// fenceHolds tells, from a read of the fence's key, whether a fence that
// compares the key's CreateRevision (election.Leadership.Fence) still
// holds; any other kind of fence is taken as held, so that its failure reads
// as a conflict.
func fenceHolds(fence clientv3.Cmp, kvs []*mvccpb.KeyValue) bool {
	pc := fence.GetCompare()
	if pc.Target != pb.Compare_CREATE || pc.Result != pb.Compare_EQUAL {
		return true
	}
	return len(kvs) == 1 && kvs[0].CreateRevision == pc.GetCreateRevision()
}
