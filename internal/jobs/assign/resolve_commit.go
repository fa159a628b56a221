package assign

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/follow"
)

// commitPlan writes one assignment's resolution, fenced and compared with
// what it was planned from. Its runs' records and what they cause can
// outgrow one transaction (etcd's --max-txn-ops: 40 lost runs, each with a
// retry entry, a spec and a sink's notification), so they are written in
// parts, each with the same guards: the fence, no marker written since the
// read, the worker dead, the assignment unchanged. The moved runs and the
// deletes of the assignment and its markers go in the last part, so the
// assignment lives until every run it names is recorded or moved. A part
// that fails a guard stops the rest (ErrConflict: Resolve reads again and
// finds the parts already written as records).
func (rv *Resolver) commitPlan(ctx context.Context, fence clientv3.Cmp, snap Snapshot, st *Stored, plan resolvePlan) ([]Resolution, error) {
	guards := []clientv3.Cmp{
		fence,
		clientv3.Compare(clientv3.ModRevision(rv.keys.AssignmentClaimed(st.Worker, st.At, st.Group)), "<", snap.Revision+1).WithPrefix(),
		rv.gone(st.Worker),
		clientv3.Compare(clientv3.ModRevision(st.Key(rv.keys)), "=", st.ModRevision),
	}
	_, deletes := rv.cleanupOps(st)
	last := plan.moved
	last.ops = append(last.ops, deletes...)
	parts, err := rv.packParts(st, len(guards), plan.items, last)
	if err != nil {
		return nil, err
	}
	var done []Resolution
	for _, p := range parts {
		if err := rv.commitPart(ctx, fence, st, append(append([]clientv3.Cmp{}, guards...), p.cmps...), p.ops); err != nil {
			return done, err
		}
		done = append(done, p.done...)
	}
	return done, nil
}

// packParts puts items into parts under the limits, in order, and last
// into the last part (with items if they fit).
func (rv *Resolver) packParts(st *Stored, guards int, items []planItem, last planItem) ([]planItem, error) {
	fits := func(p planItem) bool {
		width := max(guards+len(p.cmps), len(p.ops))
		return width+follow.NestedDepth(p.ops) <= rv.maxOps
	}
	var parts []planItem
	var cur planItem
	for _, it := range items {
		next := cur
		next.add(it)
		if fits(next) {
			cur = next
			continue
		}
		if len(cur.ops) == 0 {
			return nil, fmt.Errorf("assign: resolve %s: run %s alone needs more than etcd's --max-txn-ops %d: %w", st.Key(rv.keys), it.done[0].RunID, rv.maxOps, ErrTooLarge)
		}
		parts, cur = append(parts, cur), it
	}
	next := cur
	next.add(last)
	if fits(next) {
		return append(parts, next), nil
	}
	if !fits(last) {
		return nil, fmt.Errorf("assign: resolve %s: the moves and deletes need more than etcd's --max-txn-ops %d: %w", st.Key(rv.keys), rv.maxOps, ErrTooLarge)
	}
	if len(cur.ops) > 0 {
		parts = append(parts, cur)
	}
	return append(parts, last), nil
}

// commitPart writes one part.
func (rv *Resolver) commitPart(ctx context.Context, fence clientv3.Cmp, st *Stored, cmps []clientv3.Cmp, ops []clientv3.Op) error {
	where := fmt.Sprintf("resolve %s", st.Key(rv.keys))
	resp, err := rv.kv.Txn(ctx).If(cmps...).Then(ops...).Else(clientv3.OpGet(string(fence.KeyBytes()), clientv3.WithKeysOnly())).Commit()
	if err != nil {
		return fmt.Errorf("assign: %s: %w", where, err)
	}
	if !resp.Succeeded {
		if !fenceHolds(fence, resp.Responses[0].GetResponseRange().Kvs) {
			return fmt.Errorf("assign: %s: %w", where, ErrNotLeader)
		}
		return fmt.Errorf("assign: %s: changed since read: %w", where, ErrConflict)
	}
	return nil
}
