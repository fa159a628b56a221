package assign

import (
	"context"
	"encoding/json"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/slots"
)

// readRefusals reads, at rev (what the chunk's compares saw), what refused
// each run of rs that claims marks refused, and sets its Reason, or, when
// its slots hold that very run under lease (a chunk sent again after its
// answer was lost), its Token and Claimed. The reads go in read-only
// transactions of at most maxOps reads. A chunk's runs are almost never
// refused in a healthy cluster: reading afterwards costs a round trip
// when one is, where reads in each run's Else were decoded, logged and
// applied by every member with every claim.
func (c *Claimer) readRefusals(ctx context.Context, lease clientv3.LeaseID, rev int64, rs []Run, claims []Claim, refused []int) error {
	for len(refused) > 0 {
		var ops []clientv3.Op
		var ends []int // where each run's reads end in ops
		for _, i := range refused {
			reads := c.refusalReads(rs[i], claims[i].RunID, rev)
			if len(ends) > 0 && len(ops)+len(reads) > c.maxOps {
				break
			}
			ops = append(ops, reads...)
			ends = append(ends, len(ops))
		}
		n := len(ends)
		resp, err := c.kv.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return fmt.Errorf("read what refused %d runs at revision %d: %w", n, rev, err)
		}
		at := 0
		for k, i := range refused[:n] {
			reads := resp.Responses[at:ends[k]]
			at = ends[k]
			claims[i].Reason, claims[i].Token, claims[i].Holder = refusal(lease, claims[i].RunID, reads)
			claims[i].Queued = reads[1].GetResponseRange().Count > 0
			if claims[i].Token != 0 {
				claims[i].Outcome = Claimed
			}
		}
		refused = refused[n:]
	}
	return nil
}

// refusalReads are the reads that tell why r was refused: its record and
// its job's waiting runs counted, then each of its slot keys.
func (c *Claimer) refusalReads(r Run, runID string, rev int64) []clientv3.Op {
	ops := []clientv3.Op{
		clientv3.OpGet(c.keys.Record(r.Job, runID), clientv3.WithCountOnly(), clientv3.WithRev(rev)),
		clientv3.OpGet(c.keys.JobQueue(r.Job), clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithRev(rev)),
	}
	for _, k := range c.runKeys(r) {
		ops = append(ops, clientv3.OpGet(k, clientv3.WithRev(rev)))
	}
	return ops
}

// refusal judges a refused run from its reads (refusalReads): which
// compare failed, and for a slot taken the value of the one whose run
// started last; or, when its slots hold this run under this lease, the
// token of the claim that took them.
func refusal(lease clientv3.LeaseID, runID string, rs []*pb.ResponseOp) (Reason, int64, slots.Value) {
	if rs[0].GetResponseRange().Count > 0 {
		return RecordExists, 0, slots.Value{}
	}
	var token int64
	var holder slots.Value
	mine := true
	for _, r := range rs[2:] {
		kvs := r.GetResponseRange().Kvs
		if len(kvs) == 0 {
			mine = false
			continue
		}
		var v slots.Value
		_ = json.Unmarshal(kvs[0].Value, &v)
		if v.RunID != runID || clientv3.LeaseID(kvs[0].Lease) != lease || token != 0 && kvs[0].CreateRevision != token {
			mine = false
		}
		if token == 0 || v.StartedAt.After(holder.StartedAt) {
			holder = v
		}
		token = kvs[0].CreateRevision
	}
	if mine && token != 0 {
		return "", token, slots.Value{}
	}
	if token != 0 {
		return SlotTaken, 0, holder
	}
	return Waiting, 0, slots.Value{}
}
