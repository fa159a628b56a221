package worker

import (
	"context"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/rendezvous"
	"github.com/etcdsched/scheduler/internal/runs"
)

// handBackTimeout bounds the hand-back of a stopping worker's assignments:
// what it does not reach is the leader's to resolve once this
// incarnation's member key is gone.
const handBackTimeout = 2 * time.Second

// handBack gives away the runs of this incarnation's assignments not
// taken up yet, when the worker stops claiming (a graceful shutdown): each
// assignment to a live replica of the lean protocol (as a backup's
// take-over moves it: assign.Store.Steal), which claims its runs when due
// as its own; else to the queue path (handBackOne). Either way the
// replicas that stay run them on time, without waiting for the leader to
// find this one gone; and a leader of the version before, which knows no
// assignments and resolves no dead worker (a rollback, docs/protocol.md
// "Mixed versions"), finds every tick the old replicas can run on the
// queue path.
func (m *mover) handBack() {
	if m.d.Assign == nil {
		return
	}
	// The session live now, without waiting for one: with none, the
	// runs are the leader's to resolve, and a shutdown must not wait.
	now, done := context.WithCancel(context.Background())
	done()
	sess, err := m.d.Sessions.Current(now)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), handBackTimeout)
	defer cancel()
	self := keys.Incarnation(m.d.ID, int64(sess.Lease()))
	peers := m.leanPeers()
	given, queued := 0, 0
	for _, st := range m.view.untaken(self) {
		if ctx.Err() != nil {
			break
		}
		if to := rendezvous.Pick(peers, st.Key(m.d.Keys)); to != "" {
			if _, err := m.d.Assign.Steal(ctx, st.Assignment, st.ModRevision, to); err == nil {
				given += len(st.Jobs)
				continue
			}
		}
		if m.handBackOne(ctx, st) {
			queued += len(st.Jobs)
		}
	}
	if given+queued > 0 {
		m.d.Log.Info("stopping: assigned runs given to the replicas that stay", "to_peers", given, "to_the_queue", queued)
	}
}

// leanPeers are the live lean incarnations of the other replicas; none
// while any member does not run the lean protocol (a rolling upgrade: an
// old leader must find the runs on the queue path).
func (m *mover) leanPeers() []string {
	if m.d.Peers == nil {
		return nil
	}
	peers, all := m.d.Peers.Lean()
	if !all {
		return nil
	}
	return slices.DeleteFunc(peers, func(p string) bool {
		id, _, _ := keys.ParseIncarnation(p)
		return id == m.d.ID
	})
}

// handBackOne moves st's runs to the queue path; false when st changed, a
// chunk claimed from it, or etcd did not answer.
func (m *mover) handBackOne(ctx context.Context, st assign.Stored) bool {
	key := st.Key(m.d.Keys)
	ops := []clientv3.Op{clientv3.OpDelete(key)}
	for _, j := range st.Jobs {
		e := &queue.Entry{RunID: st.RunID(j.Name), Job: j.Name, ScheduledAt: st.At.UTC(), NotBefore: st.At.UTC(), Attempt: 1,
			Trigger: runs.Schedule, SpecRef: j.SpecRef, State: queue.Pending}
		if it, err := m.d.Specs.Resolve(ctx, &queue.Item{Entry: e}); err == nil {
			e.Input = it.Spec.DefaultInput()
		}
		entry := m.d.Keys.Entry(j.Name, e.RunID)
		ops = append(ops, clientv3.OpTxn([]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(entry), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(m.d.Keys.Record(j.Name, e.RunID)), "=", 0),
		}, []clientv3.Op{clientv3.OpPut(entry, e.Encode())}, nil))
	}
	resp, err := m.d.Client.Txn(ctx).If(
		clientv3.Compare(clientv3.ModRevision(key), "=", st.ModRevision),
		clientv3.Compare(clientv3.CreateRevision(m.d.Keys.AssignmentClaimed(st.Worker, st.At, st.Group)), "=", 0).WithPrefix(),
	).Then(ops...).Commit()
	return err == nil && resp.Succeeded
}
