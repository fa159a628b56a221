package assign

import (
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/runs"
)

// The cursor jobs/<job>/cursor keeps today's value, the last tick in
// runs.TimeFormat, UTC (as internal/jobs/leader writes and reads it), so a
// leader of either protocol reads what the other wrote (docs/protocol.md,
// "Mixed versions").

// EncodeCursor is a cursor's stored value.
func EncodeCursor(t time.Time) string { return t.UTC().Format(runs.TimeFormat) }

// DecodeCursor reads a cursor's stored value.
func DecodeCursor(value []byte) (time.Time, error) {
	t, err := time.Parse(runs.TimeFormat, string(value))
	if err != nil {
		return time.Time{}, fmt.Errorf("assign: cursor %q: %w", value, err)
	}
	return t, nil
}

// cursorIs compares a cursor with its last written value, or its absence
// when last is zero, as the leader does today.
func cursorIs(key string, last time.Time) clientv3.Cmp {
	if last.IsZero() {
		return clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	}
	return clientv3.Compare(clientv3.Value(key), "=", EncodeCursor(last))
}

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
