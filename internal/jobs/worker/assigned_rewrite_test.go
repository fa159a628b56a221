package worker

import (
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// An assignment the leader rewrote before it came due (it withdrew a
// paused or changed job's tick) runs the new version: the withdrawn run
// neither runs nor is recorded, the other runs once.
func TestARewrittenAssignmentRunsItsNewVersion(t *testing.T) {
	tw, exec := startCounted(t, "/lean-rw/", testWorkerOptions{}, "kept", "withdrawn")
	at := time.Now().Add(time.Second).UTC()
	a := tw.assignJobs(t, tw.incarnation(t), at, "kept", "withdrawn")
	a.Jobs = a.Jobs[:1]
	if _, err := tw.cli.Put(t.Context(), a.Key(tw.layout), a.Encode()); err != nil {
		t.Fatal(err)
	}
	waitRecord(t, tw.cli, tw.layout, runs.ID("kept", at))
	tw.waitSettled(t)
	if resp, err := tw.cli.Get(t.Context(), tw.layout.Record("withdrawn", runs.ID("withdrawn", at))); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("the withdrawn run was recorded (%v)", err)
	}
	if n := exec.runs.Load(); n != 1 {
		t.Errorf("%d runs executed, want 1", n)
	}
}

// A version taken up whose claim found it written anew (ErrGone before any
// chunk claimed) is taken up again in its newer version, whether that
// version reached the view before the claim's answer or after.
func TestTheViewTakesUpARewrittenAssignmentAgain(t *testing.T) {
	layout := keys.New("/view/")
	at := time.Date(2026, 11, 25, 19, 0, 0, 0, time.UTC)
	a := assign.Assignment{Worker: "w1.10", At: at, Group: "a", Jobs: []assign.Job{{Name: "a"}, {Name: "b"}}}
	kv := func(rev int64, jobs ...string) *clientv3.Event {
		b := a
		b.Jobs = nil
		for _, j := range jobs {
			b.Jobs = append(b.Jobs, assign.Job{Name: j})
		}
		return &clientv3.Event{Type: clientv3.EventTypePut, Kv: &mvccpb.KeyValue{Key: []byte(b.Key(layout)), Value: []byte(b.Encode()), CreateRevision: 5, ModRevision: rev}}
	}
	for _, newerFirst := range []bool{true, false} {
		v := newAssignedView(layout, func() {}, func() *config.Config { return &config.Config{} }, 0) // no job known: taken up at its instant
		v.Apply([]*clientv3.Event{kv(5, "a", "b")}, 5)
		if got := v.take(at); len(got) != 1 || got[0].ModRevision != 5 {
			t.Fatalf("take: %+v", got)
		}
		if newerFirst {
			v.Apply([]*clientv3.Event{kv(9, "a")}, 9)
			if got := v.take(at); len(got) != 0 {
				t.Fatalf("a rewrite was taken up before its claim failed: %+v", got)
			}
			v.retake(a.Key(layout), 5)
		} else {
			v.retake(a.Key(layout), 5)
			v.Apply([]*clientv3.Event{kv(9, "a")}, 9)
		}
		got := v.take(at)
		if len(got) != 1 || got[0].ModRevision != 9 || len(got[0].Jobs) != 1 {
			t.Errorf("newer version first %v: taken up again %+v, want the version of revision 9", newerFirst, got)
		}
	}
}

// A worker that stops claiming (a graceful shutdown) hands the runs of its
// assignments not yet due to the queue path, so that the replicas that
// stay, or a leader of the version before, run them; the assignment goes.
func TestAStoppingWorkerHandsItsAssignmentsToTheQueue(t *testing.T) {
	tw, _ := startCounted(t, "/lean-hb/", testWorkerOptions{}, "later")
	at := time.Now().Add(time.Hour).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "later")
	poll.For(t, 30*time.Second, "the worker's view of its assignment", func() bool {
		return !tw.w.runner.view.next().IsZero()
	})
	tw.stopRun()
	poll.For(t, 30*time.Second, "the assignment handed to the queue", func() bool {
		return tw.count(t, tw.layout.Assignments()) == 0 && tw.count(t, tw.layout.Entry("later", runs.ID("later", at))) == 1
	})
}

// fixedPeers is a fixed list of lean incarnations, all members lean.
type fixedPeers []string

func (p fixedPeers) Lean() ([]string, bool) { return append([]string(nil), p...), true }

func (p fixedPeers) Every(int) bool { return true }

// laterPeers lists the lean incarnations set once they exist.
type laterPeers struct {
	mu    sync.Mutex
	peers fixedPeers
}

func (p *laterPeers) set(peers ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peers = peers
}

func (p *laterPeers) Lean() ([]string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peers.Lean()
}

func (p *laterPeers) Every(int) bool { return true }

// With a live replica of the lean protocol to take them, a stopping
// worker gives its assignments not taken up to it, as assignments: that
// replica claims them when due, with no queue entry and no backup's wait.
func TestAStoppingWorkerGivesItsAssignmentsToALeanPeer(t *testing.T) {
	exec := &countingExecutor{started: make(chan string, 8)}
	peers := &laterPeers{} // the peer, set below once it is a member
	tw := startTestWorker(t, "/lean-give/", job("later"), exec, testWorkerOptions{peers: peers})
	// A take-over goes only to a member on its lease.
	lease, err := tw.cli.Grant(t.Context(), 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tw.cli.Put(t.Context(), tw.layout.Member("w2"), "{}", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	peer := keys.Incarnation("w2", int64(lease.ID))
	peers.set(peer)
	at := time.Now().Add(time.Hour).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "later")
	poll.For(t, 30*time.Second, "the worker's view of its assignment", func() bool {
		return !tw.w.runner.view.next().IsZero()
	})
	tw.stopRun()
	poll.For(t, 30*time.Second, "the assignment given to "+peer, func() bool {
		return tw.count(t, tw.layout.WorkerAssignments(peer)) == 1 && tw.count(t, tw.layout.Assignments()) == 1
	})
	if n := tw.count(t, tw.layout.Queue()); n != 0 {
		t.Errorf("%d queue entries, want none: the peer runs the tick as assigned", n)
	}
}
