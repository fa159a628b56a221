package assign

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// A chunk's claim is built as etcd's request itself, not through
// clientv3's Op and Cmp: those clone every compare by reflection when a
// transaction nests one (OpTxn), when the parent takes the nested one
// (Then), and for a prefix (WithPrefix), two or three times each, and a
// chunk of 40 runs has 120 compares. The clones were 4-5 % of a replica's
// CPU at a burst (docs/performance.md, "Profiling"). The request is the one
// clientv3 would send (TestClaimRequestIsWhatClientv3Sends).

// claimRequest is ClaimChunk's request: If(ModRevision(assignment) == rev)
// Then(put the chunk's marker, each run's nested transaction).
func (c *Claimer) claimRequest(lease clientv3.LeaseID, a *Assignment, rev int64, marker, markerValue string, rs []Run) *pb.TxnRequest {
	then := make([]*pb.RequestOp, 0, 1+len(rs))
	then = append(then, putOp(marker, markerValue, 0))
	for _, r := range rs {
		then = append(then, &pb.RequestOp{Request: &pb.RequestOp_RequestTxn{RequestTxn: c.runRequest(lease, a, r)}})
	}
	return &pb.TxnRequest{
		Compare: []*pb.Compare{{
			Key: []byte(a.Key(c.keys)), Target: pb.Compare_MOD, Result: pb.Compare_EQUAL,
			TargetUnion: &pb.Compare_ModRevision{ModRevision: rev},
		}},
		Success: then,
	}
}

// runRequest is one run's nested transaction: If(no record, nobody of its
// job waiting in queue/<job>/, each slot free) Then(put each slot under
// lease). The record is compared for every assignment, one as its
// authorization wrote it too: a take-over moves runs their dead worker
// shed, and a withdrawal may move the cursor back past a tick recorded at
// its lead, which a resume assigns again (docs/design-shed.md, "Every
// claim compares its run's record"). No Else: a refusal is read
// afterwards at the revision the compares saw (readRefusals), so the
// request etcd decodes, logs and applies carries no reads that almost
// never run.
func (c *Claimer) runRequest(lease clientv3.LeaseID, a *Assignment, r Run) *pb.TxnRequest {
	runID := a.RunID(r.Job)
	holder := r.Holder
	if holder == "" {
		holder = a.Worker
	}
	value := slots.Value{RunID: runID, Holder: holder, StartedAt: r.StartedAt.UTC(), ScheduledAt: a.At.UTC()}.Encode()
	waiting := c.keys.JobQueue(r.Job)
	ks := c.runKeys(r)
	cmps := make([]*pb.Compare, 0, 2+len(ks))
	cmps = append(cmps, absent(c.keys.Record(r.Job, runID), ""), absent(waiting, clientv3.GetPrefixRangeEnd(waiting)))
	puts := make([]*pb.RequestOp, 0, len(ks))
	for _, k := range ks {
		cmps = append(cmps, absent(k, ""))
		puts = append(puts, putOp(k, value, lease))
	}
	return &pb.TxnRequest{Compare: cmps, Success: puts}
}

// created0 is the target of every absent compare: requests only read it.
var created0 = &pb.Compare_CreateRevision{CreateRevision: 0}

// absent compares that no key in [key, end) exists (one key when end is
// ""): CreateRevision == 0.
func absent(key, end string) *pb.Compare {
	cmp := &pb.Compare{Key: []byte(key), Target: pb.Compare_CREATE, Result: pb.Compare_EQUAL, TargetUnion: created0}
	if end != "" {
		cmp.RangeEnd = []byte(end)
	}
	return cmp
}

// putOp puts value at key, under lease unless it is 0.
func putOp[V string | []byte](key string, value V, lease clientv3.LeaseID) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{
		Key: []byte(key), Value: []byte(value), Lease: int64(lease),
	}}}
}

// sendTxn sends req in a group commit (Options.Batch): the chunks of an
// instant, each an assignment's, and the releases and cleanups sent
// meanwhile share one raft entry (docs/design-etcd.md, group commit). The
// chunk's compares see the revision before its commit there too: etcd
// evaluates every compare of a request before its first write, and the
// committer keeps apart members that write what another reads.
func (c *Claimer) sendTxn(ctx context.Context, req *pb.TxnRequest) (*pb.TxnResponse, error) {
	resp, err := c.batch.Commit(ctx, txnbatch.Txn{Request: req})
	if err != nil {
		return nil, err
	}
	return (*pb.TxnResponse)(resp), nil
}
