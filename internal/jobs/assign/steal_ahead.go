package assign

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/slots"
)

// MarkerAhead reports whether a claim marker's stored value is that of a
// chunk claimed ahead whose start mark is not written (StartChunk): a
// peer's view tells it apart without decoding the list.
func MarkerAhead(value []byte) bool {
	return bytes.HasSuffix(value, []byte(`"`+aheadMark+`"]`))
}

// MaxTakeOverJobs is the most jobs an assignment may name for each
// take-over (Steal, StealAhead) to fit one transaction under maxOps
// compares: at worst StealAhead's, an entry's, a slot's and a marker's
// compare a job (a chunk a run), the markers' prefix and the move's three.
// The leader writes no larger assignment (its leanJobsPerAssignment).
func MaxTakeOverJobs(maxOps int) int { return (maxOps - 5) / 3 }

// StealAhead is Steal for an assignment whose chunks were all claimed
// ahead and none marked started: its worker holds the runs' slots and
// started none. A worker killed then keeps those slots until its lease
// expires, and its runs would wait that long (moved by the leader, then
// too late for their tick). The take-over reads the markers and the slots
// they claimed, and in one transaction, if none changed since (each
// marker as read and no other written, each slot on the claim's token,
// the assignment as read), deletes the markers and those slots and moves
// the jobs to worker to. The worker's start mark compares its marker, so
// it fails after the take-over and the worker starts nothing (G1); the
// slots a claim held are freed in the transaction that moves their runs,
// so the new worker's claims keep max_concurrency (G3). ErrConflict: the
// assignment changed, a chunk was marked started or claimed since, or it
// is gone.
func (s *Store) StealAhead(ctx context.Context, from Assignment, modRev int64, to string) (Stored, error) {
	if len(from.Jobs) > MaxTakeOverJobs(s.maxOps) {
		return Stored{}, fmt.Errorf("assign: take over %s: %d jobs; one transaction under etcd's --max-txn-ops %d moves at most %d: %w",
			from.Key(s.keys), len(from.Jobs), s.maxOps, MaxTakeOverJobs(s.maxOps), ErrTooLarge)
	}
	jobs, unqueued, err := s.unqueued(ctx, &from)
	if err != nil {
		return Stored{}, err
	}
	cmps, dels, err := s.aheadClaims(ctx, &from, jobs)
	if err != nil {
		return Stored{}, err
	}
	return s.move(ctx, from, modRev, to, jobs, append(cmps, unqueued...), dels)
}

// aheadClaims reads from's markers and the slots of its runs that move
// (jobs) at one revision and returns the compares that none changed since
// and the deletes of the markers and of the slots the claims hold (a run
// left on the queue path keeps its slot, should its queue run hold one).
// ErrConflict: no marker, or one marked started.
func (s *Store) aheadClaims(ctx context.Context, from *Assignment, jobs []Job) ([]clientv3.Cmp, []clientv3.Op, error) {
	prefix := s.keys.AssignmentClaimed(from.Worker, from.At, from.Group)
	gets := []clientv3.Op{clientv3.OpGet(prefix, clientv3.WithPrefix())}
	for _, j := range jobs {
		gets = append(gets, clientv3.OpGet(s.keys.JobSlots(j.Name), clientv3.WithPrefix()))
	}
	resp, err := s.kv.Txn(ctx).Then(gets...).Commit()
	if err != nil {
		return nil, nil, fmt.Errorf("assign: take over %s: read its claims: %w", from.Key(s.keys), err)
	}
	markers := resp.Responses[0].GetResponseRange().Kvs
	if len(markers) == 0 {
		return nil, nil, fmt.Errorf("assign: take over %s: no chunk claimed from it: %w", from.Key(s.keys), ErrConflict)
	}
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(prefix), "<", resp.Header.Revision+1).WithPrefix()}
	var dels []clientv3.Op
	for _, kv := range markers {
		if !MarkerAhead(kv.Value) {
			return nil, nil, fmt.Errorf("assign: take over %s: a chunk is marked started: %w", from.Key(s.keys), ErrConflict)
		}
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision))
		dels = append(dels, clientv3.OpDelete(string(kv.Key)))
	}
	_, lease, _ := keys.ParseIncarnation(from.Worker)
	for i, j := range jobs {
		for _, kv := range resp.Responses[1+i].GetResponseRange().Kvs {
			var v slots.Value
			if json.Unmarshal(kv.Value, &v) != nil || v.RunID != from.RunID(j.Name) || lease != 0 && kv.Lease != lease {
				continue
			}
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(string(kv.Key)), "=", kv.CreateRevision))
			dels = append(dels, clientv3.OpDelete(string(kv.Key)))
		}
	}
	return cmps, dels, nil
}
