package assign

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Steal moves from, an assignment of another incarnation read at
// ModRevision modRev, to worker to: the take-over of a backup worker when
// from's worker has not claimed from it by the backup's turn (a worker
// killed keeps its member key, and its assignments, until its lease
// expires, a session TTL later; docs/protocol.md, "Take-over"). One
// transaction deletes from and puts the same jobs in a new assignment of
// to, and holds only if from is still as read, no chunk has claimed from
// it (no claim marker), the new key does not exist and to is a member on
// its lease:
//   - a chunk of from's worker that commits first writes a marker, and
//     the take-over fails; one that commits after finds from gone (its
//     compare is from's ModRevision) and claims nothing;
//   - a tick is in one assignment before and one after, so it is claimed
//     from one (G1), and it is in one until its record (G2);
//   - the leader's withdrawal, resolution and a second backup's take-over
//     each compare from's ModRevision: one of them wins;
//   - an incarnation gets an assignment only once its member key has been
//     on its lease (the leader's, a resolution's and a hand-back's go to
//     incarnations they list), which it leaves only once the lease is
//     gone (election.Membership.Run): while to's slots live the leader
//     does not resolve it, and a run's release has no record to write
//     over. A replica's next session waits for its member key, and takes
//     nothing over meanwhile.
//
// It needs no fence: it moves what the leader authorized and authorizes
// nothing. ErrConflict: from changed, was claimed from or is gone.
func (s *Store) Steal(ctx context.Context, from Assignment, modRev int64, to string) (Stored, error) {
	noMarker := clientv3.Compare(clientv3.CreateRevision(s.keys.AssignmentClaimed(from.Worker, from.At, from.Group)), "=", 0).WithPrefix()
	jobs, cmps, err := s.unqueued(ctx, &from)
	if err != nil {
		return Stored{}, err
	}
	return s.move(ctx, from, modRev, to, jobs, append(cmps, noMarker), nil)
}

// move is a take-over's transaction: if cmps hold, from is as read
// (ModRevision modRev) and to's new assignment does not exist yet, it
// applies ops, deletes from and puts jobs (from's whose run has no queue
// entry: unqueued) as an assignment of to (Steal, StealAhead).
// ErrConflict: a compare failed; nothing was written.
func (s *Store) move(ctx context.Context, from Assignment, modRev int64, to string, jobs []Job, cmps []clientv3.Cmp, ops []clientv3.Op) (Stored, error) {
	target := Assignment{Worker: to, At: from.At, Group: movedGroup(&from, modRev), Jobs: jobs}
	if err := target.Validate(); err != nil {
		return Stored{}, err
	}
	if to == from.Worker {
		return Stored{}, fmt.Errorf("assign: take over %s: it is %s's already", from.Key(s.keys), to)
	}
	oldKey, newKey := from.Key(s.keys), target.Key(s.keys)
	cmps = append(cmps,
		clientv3.Compare(clientv3.ModRevision(oldKey), "=", modRev),
		clientv3.Compare(clientv3.CreateRevision(newKey), "=", 0),
		s.living(to))
	resp, err := s.kv.Txn(ctx).If(cmps...).Then(append(ops, clientv3.OpDelete(oldKey), clientv3.OpPut(newKey, target.Encode()))...).Commit()
	if err != nil {
		return Stored{}, fmt.Errorf("assign: take over %s: %w", oldKey, err)
	}
	if !resp.Succeeded {
		return Stored{}, fmt.Errorf("assign: take over %s: %w", oldKey, ErrConflict)
	}
	rev := resp.Header.Revision
	return Stored{Assignment: target, CreateRevision: rev, ModRevision: rev}, nil
}

// unqueued are the jobs of from whose run has no queue entry, and the
// compares that each still has none. A run its worker handed to the queue
// path (refused at its claim, or settled there before one: a pending
// entry) is the queue path's though from names it: moved, the new worker
// would decide it too (the fault suite's rolling upgrade saw a tick
// refused ahead, queued by its stopping worker, then moved with its
// assignment: recorded skipped by both). The resolution leaves such runs
// alone likewise (Resolver.unrecorded). ErrConflict: every run is queued.
func (s *Store) unqueued(ctx context.Context, from *Assignment) ([]Job, []clientv3.Cmp, error) {
	if len(from.Jobs)+4 > s.maxOps { // an entry's compare a job, beside the move's
		return nil, nil, fmt.Errorf("assign: take over %s: %d jobs: %w", from.Key(s.keys), len(from.Jobs), ErrTooLarge)
	}
	gets := make([]clientv3.Op, len(from.Jobs))
	for i, j := range from.Jobs {
		gets[i] = clientv3.OpGet(s.keys.Entry(j.Name, from.RunID(j.Name)), clientv3.WithCountOnly())
	}
	resp, err := s.kv.Txn(ctx).Then(gets...).Commit()
	if err != nil {
		return nil, nil, fmt.Errorf("assign: take over %s: read its runs' entries: %w", from.Key(s.keys), err)
	}
	var jobs []Job
	var cmps []clientv3.Cmp
	for i, j := range from.Jobs {
		if resp.Responses[i].GetResponseRange().Count > 0 {
			continue
		}
		jobs = append(jobs, j)
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(s.keys.Entry(j.Name, from.RunID(j.Name))), "=", 0))
	}
	if len(jobs) == 0 {
		return nil, nil, fmt.Errorf("assign: take over %s: every run is on the queue path: %w", from.Key(s.keys), ErrConflict)
	}
	return jobs, cmps, nil
}
