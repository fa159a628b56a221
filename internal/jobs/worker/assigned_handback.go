package worker

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// handBackTimeout bounds the hand-back of a stopping worker's assignments:
// what it does not reach is the leader's to resolve once this
// incarnation's member key is gone.
const handBackTimeout = 2 * time.Second

// handBack gives the queue path the runs of this incarnation's
// assignments not taken up yet, when the worker stops claiming (a graceful
// shutdown). Each assignment, if still as read and no chunk has claimed
// from it, is deleted in the transaction that writes a pending entry for
// each of its runs with neither entry nor record. The replicas that stay
// run them at once, without waiting for the leader to find this one gone;
// and a leader of the version before, which knows no assignments and
// resolves no dead worker (a rollback, docs/protocol.md "Mixed versions"),
// still finds every tick on the queue path.
func (w *Worker) handBack() {
	if w.d.Assign == nil {
		return
	}
	// The session live now, without waiting for one: with none, the
	// runs are the leader's to resolve, and a shutdown must not wait.
	now, done := context.WithCancel(context.Background())
	done()
	sess, err := w.d.Sessions.Current(now)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), handBackTimeout)
	defer cancel()
	self := keys.Incarnation(w.d.ID, int64(sess.Lease()))
	n := 0
	for _, st := range w.assigned.untaken(self) {
		if ctx.Err() != nil {
			break
		}
		if w.handBackOne(ctx, st) {
			n += len(st.Jobs)
		}
	}
	if n > 0 {
		w.d.Log.Info("stopping: assigned runs handed to the queue", "runs", n)
	}
}

// handBackOne moves st's runs to the queue path; false when st changed, a
// chunk claimed from it, or etcd did not answer.
func (w *Worker) handBackOne(ctx context.Context, st assign.Stored) bool {
	key := st.Key(w.d.Keys)
	ops := []clientv3.Op{clientv3.OpDelete(key)}
	for _, j := range st.Jobs {
		e := &queue.Entry{RunID: st.RunID(j.Name), Job: j.Name, ScheduledAt: st.At.UTC(), NotBefore: st.At.UTC(), Attempt: 1,
			Trigger: runs.Schedule, SpecRef: j.SpecRef, State: queue.Pending}
		if it, err := w.d.Specs.Resolve(ctx, &queue.Item{Entry: e}); err == nil {
			e.Input = it.Spec.DefaultInput()
		}
		entry := w.d.Keys.Entry(j.Name, e.RunID)
		ops = append(ops, clientv3.OpTxn([]clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(entry), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(w.d.Keys.Record(j.Name, e.RunID)), "=", 0),
		}, []clientv3.Op{clientv3.OpPut(entry, e.Encode())}, nil))
	}
	resp, err := w.d.Client.Txn(ctx).If(
		clientv3.Compare(clientv3.ModRevision(key), "=", st.ModRevision),
		clientv3.Compare(clientv3.CreateRevision(w.d.Keys.AssignmentClaimed(st.Worker, st.At, st.Group)), "=", 0).WithPrefix(),
	).Then(ops...).Commit()
	return err == nil && resp.Succeeded
}
