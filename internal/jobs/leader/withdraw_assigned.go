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
// claimed from, latest first, each in a transaction that also moves the
// job's cursor back (back) to the latest instant the job is still assigned
// at, or to `to`: a leader that dies between two take-outs, or before the
// cursor's own move, leaves no tick taken out ahead of the cursor, so the
// next term plans every one again (TestALeaderDeadMidWithdrawalLosesNoTick);
// and the cursor never goes back past a tick still assigned, which would
// be assigned twice. A changed job (after set) takes out nothing before a
// tick it had to keep: the cursor cannot go back past that one to plan
// them again. It returns the latest instant an assignment still names the
// job at (zero: none), and how many ticks it took out.
func (as *assignments) withdraw(ctx context.Context, job string, after, to time.Time, back cursorBack) (kept time.Time, n int, err error) {
	if as.d.Workers == nil {
		return time.Time{}, 0, nil
	}
	naming, err := as.snap.naming(ctx, as.base, job)
	if err != nil {
		return time.Time{}, 0, err
	}
	slices.SortFunc(naming, func(a, b snapped) int { return b.a.At.Compare(a.a.At) })
	only := func(name string) bool { return name == job }
	for i, sn := range naming {
		a := sn.a
		if sn.stuck || (!after.IsZero() && (!a.At.After(after) || !kept.IsZero())) {
			kept = latest(kept, a.At)
			continue
		}
		cursor := latest(to, kept)
		if i+1 < len(naming) {
			cursor = latest(cursor, naming[i+1].a.At)
		}
		cmps, ops, moved := back(cursor)
		out, err := as.takeOut(ctx, a, sn.modRev, only, cmps, ops)
		if err != nil {
			return kept, n, err
		}
		if !out {
			kept = latest(kept, a.At)
			continue
		}
		moved()
		n++
	}
	return kept, n, nil
}

// cursorBack is what a take-out moves with it: the compares and the write
// that set the job's cursor back to at when it is further ahead (none
// otherwise), and what to note once they committed.
type cursorBack func(at time.Time) (cmps []clientv3.Cmp, ops []clientv3.Op, moved func())

// takeOut rewrites a without the jobs out says to take (deletes it when
// none is left), if it is still as read at modRev and no chunk has claimed
// from it.
// cmps and ops go with the rewrite (a cursor's move back, cursorBack).
func (as *assignments) takeOut(ctx context.Context, a assign.Assignment, modRev int64, out func(job string) bool, cmps []clientv3.Cmp, ops []clientv3.Op) (bool, error) {
	key := a.Key(as.d.Keys)
	rest := a
	rest.Jobs = slices.DeleteFunc(slices.Clone(a.Jobs), func(j assign.Job) bool { return out(j.Name) })
	op := clientv3.OpDelete(key)
	if len(rest.Jobs) > 0 {
		op = clientv3.OpPut(key, rest.Encode())
	}
	cmps = append([]clientv3.Cmp{
		as.fence,
		clientv3.Compare(clientv3.ModRevision(key), "=", modRev),
		clientv3.Compare(clientv3.CreateRevision(as.d.Keys.AssignmentClaimed(a.Worker, a.At, a.Group)), "=", 0).WithPrefix(),
	}, cmps...)
	resp, err := as.d.Client.Txn(ctx).If(cmps...).Then(append([]clientv3.Op{op}, ops...)...).Else(clientv3.OpGet(as.term.Key)).Commit()
	if err != nil {
		return false, fmt.Errorf("leader: withdraw from %s: %w", key, err)
	}
	if !resp.Succeeded && as.fenceGone(resp) {
		return false, errNotLeader
	}
	if resp.Succeeded {
		as.snap.tookOut(key, out, resp.Header.Revision)
	} else {
		as.snap.stick(key)
	}
	return resp.Succeeded, nil
}

// takeOutGone takes the jobs a pass found removed out of every assignment
// naming any of them, one rewrite an assignment, before each job's own
// withdrawal (which then finds it in none, but those left stuck, and only
// moves its cursor). Taken one job at a time, a reload that removed a
// thousand jobs rewrote each assignment ahead (a value naming hundreds of
// jobs, one for each worker and instant assigned) once a job: thousands
// of transactions, gigabytes through raft at 4,000 jobs, and etcd near a
// core busy for 20 s. An assignment a chunk claimed from keeps its ticks,
// as in withdraw.
func (as *assignments) takeOutGone(ctx context.Context, gone []string) error {
	if as.d.Workers == nil || len(gone) < 2 {
		return nil
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	set := make(map[string]bool, len(gone))
	for _, name := range gone {
		set[name] = true
	}
	in := func(job string) bool { return set[job] }
	naming, err := as.snap.namingAny(ctx, as.base, in)
	if err != nil {
		return err
	}
	for _, sn := range naming {
		if sn.stuck {
			continue
		}
		if _, err := as.takeOut(ctx, sn.a, sn.modRev, in, nil, nil); err != nil {
			return err
		}
	}
	return nil
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
