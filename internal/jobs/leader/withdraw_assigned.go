package leader

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
)

// A paused, changed or removed job's assigned ticks are withdrawn as its
// queued ones are: taken out of their assignments, so that the cursor can
// go back and the ticks are planned again (with the new spec, or after
// the resume) or not at all. An assignment is rewritten only while no
// chunk has claimed from it (no claim marker): its worker's claims compare
// the assignment's ModRevision, so one holding the version before claims
// nothing from it and takes up the new one (docs/protocol.md). A tick
// whose assignment a worker already claims from stays, and the cursor
// stays at it: that tick has no entry or record that would stop a second
// write.

// assignments is what the withdrawals and the resolver of dead workers
// (resolve.go) share of the term's assignments: mu keeps a resolution's
// moves apart from a withdrawal (from its read of the assignments to the
// cursor's move back, withdraw.go); snap is the assignments one pass's
// withdrawals share (withdraw_snapshot.go).
type assignments struct {
	*base
	mu   sync.Mutex
	snap *assignSnap
}

// withdraw takes job out of the assignments naming it at an
// instant after `after` (every one when after is zero) that no chunk has
// claimed from. It returns the latest instant an assignment still names
// the job at (zero: none), and how many ticks it took out.
func (as *assignments) withdraw(ctx context.Context, job string, after time.Time) (kept time.Time, n int, err error) {
	if as.d.Workers == nil {
		return time.Time{}, 0, nil
	}
	naming, err := as.snap.naming(ctx, as.base, job)
	if err != nil {
		return time.Time{}, 0, err
	}
	for _, sn := range naming {
		a := sn.a
		if !after.IsZero() && !a.At.After(after) {
			kept = latest(kept, a.At)
			continue
		}
		out, err := as.takeOut(ctx, a, sn.modRev, job)
		if err != nil {
			return kept, n, err
		}
		if !out {
			kept = latest(kept, a.At)
			continue
		}
		n++
	}
	return kept, n, nil
}

// takeOut rewrites a without job (deletes it when job was its last), if
// it is still as read at modRev and no chunk has claimed from it.
func (as *assignments) takeOut(ctx context.Context, a assign.Assignment, modRev int64, job string) (bool, error) {
	key := a.Key(as.d.Keys)
	rest := a
	rest.Jobs = slices.DeleteFunc(slices.Clone(a.Jobs), func(j assign.Job) bool { return j.Name == job })
	op := clientv3.OpDelete(key)
	if len(rest.Jobs) > 0 {
		op = clientv3.OpPut(key, rest.Encode())
	}
	resp, err := as.d.Client.Txn(ctx).If(
		as.fence,
		clientv3.Compare(clientv3.ModRevision(key), "=", modRev),
		clientv3.Compare(clientv3.CreateRevision(as.d.Keys.AssignmentClaimed(a.Worker, a.At, a.Group)), "=", 0).WithPrefix(),
	).Then(op).Else(clientv3.OpGet(as.term.Key)).Commit()
	if err != nil {
		return false, fmt.Errorf("leader: withdraw %s from %s: %w", job, key, err)
	}
	if !resp.Succeeded && as.fenceGone(resp) {
		return false, errNotLeader
	}
	if resp.Succeeded {
		as.snap.tookOut(key, job, resp.Header.Revision)
	}
	return resp.Succeeded, nil
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
