package worker

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// How a lean run refused for its job's slot ends (assigned_claim.go,
// skipsAtOnce): skipped by its worker when the slot was taken at its
// instant, else on the queue path.

// holdSlot puts job's slot 0 for another run, on a lease of its own,
// which it returns.
func (tw *testWorker) holdSlot(t *testing.T, job, runID string) clientv3.LeaseID {
	t.Helper()
	return tw.holdSlotSince(t, job, runID, time.Now(), time.Now())
}

// holdSlotSince is holdSlot for a run of the tick due at due that started
// at started.
func (tw *testWorker) holdSlotSince(t *testing.T, job, runID string, started, due time.Time) clientv3.LeaseID {
	t.Helper()
	lease, err := tw.cli.Grant(context.Background(), 60)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := json.Marshal(slots.Value{RunID: runID, Holder: "elsewhere", StartedAt: started.UTC(), ScheduledAt: due.UTC()})
	if _, err := tw.cli.Put(context.Background(), tw.layout.SlotOf(job, "", 0), string(v), clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	return lease.ID
}

// A run etcd refused at its instant because its slot is taken, under
// overlap: skip, is recorded skipped by its worker, in the queue path's
// words, without a queue entry: each such entry cost etcd a claim and a
// record apart and had the replica follow the job slots. (Claimed ahead
// of its instant and refused, it is tried again at the instant first.)
func TestARefusedAssignedRunIsSkippedWithoutTheQueuePath(t *testing.T) {
	tw, exec := startCounted(t, "/lean-c/", testWorkerOptions{}, "busy")
	tw.holdSlot(t, "busy", "busy@earlier")
	rec, queued := tw.assignBusy(t, time.Now().Add(300*time.Millisecond).UTC())
	if want := "all 1 slots taken (overlap: skip)"; rec.Outcome != runs.Skipped || rec.Error != want {
		t.Errorf("recorded %s %q, want skipped %q", rec.Outcome, rec.Error, want)
	}
	if queued {
		t.Error("the run was queued: want it skipped on the lean path")
	}
	if n := exec.runs.Load(); n != 0 {
		t.Errorf("%d runs executed, want none", n)
	}
}

// assignBusy assigns job busy's tick at at to tw's worker and returns its
// record, once the worker has settled it, and whether it went through a
// queue entry (the queue path) meanwhile.
func (tw *testWorker) assignBusy(t *testing.T, at time.Time) (runs.Record, bool) {
	t.Helper()
	from := tw.revision(t)
	tw.assignJobs(t, tw.incarnation(t), at, "busy")
	id := runs.ID("busy", at)
	rec := waitRecord(t, tw.cli, tw.layout, id)
	tw.waitSettled(t)
	return rec, tw.existedBetween(t, tw.layout.Entry("busy", id), from, tw.revision(t))
}

// A lean run whose slot an elder took after the run's instant (claimed
// late: its slot's run started after it), with no run of its job in the
// queue, ends as the queue path ends the same run while that elder holds
// the slot: skipped at once, in its words (fair order sees no queued
// elder to give the run its turn after); and without a queue entry, each
// of which had every replica follow the job slots for 5 s (at 4,000
// jobs, 1.0-1.5 slot events a replica a run). The queue path's side runs
// the same run from a pending entry, the slot held throughout.
func TestALeanRunBehindALateLeanElderEndsAsOnTheQueuePath(t *testing.T) {
	end := func(t *testing.T, lean bool) (runs.Record, bool) {
		tw, exec := startCounted(t, "/lean-late/", testWorkerOptions{}, "busy")
		at := time.Now().Add(300 * time.Millisecond).UTC()
		tw.holdSlotSince(t, "busy", "busy@elder", at.Add(100*time.Millisecond), at.Add(-time.Second))
		defer func() {
			if n := exec.runs.Load(); n != 0 {
				t.Errorf("%d runs executed, want none", n)
			}
		}()
		if lean {
			return tw.assignBusy(t, at)
		}
		tw.put(t, queue.NewEntry(runs.ID("busy", at), tw.cfg.Job("busy"), nil, at, at, 1, runs.Schedule))
		return waitRecord(t, tw.cli, tw.layout, runs.ID("busy", at)), true
	}
	var recs [2]runs.Record
	for i, lean := range []bool{true, false} {
		var queued bool
		recs[i], queued = end(t, lean)
		if lean && queued {
			t.Error("the lean run was queued: want it skipped where it was refused")
		}
	}
	want := "all 1 slots taken (overlap: skip)"
	for i, path := range []string{"lean", "queue"} {
		if recs[i].Outcome != runs.Skipped || recs[i].Error != want {
			t.Errorf("%s path: recorded %s %q, want skipped %q", path, recs[i].Outcome, recs[i].Error, want)
		}
	}
}

// A lean run whose slot an elder of the queue took after the run's
// instant (a run with an entry: a tick the queue path held, claimed late)
// takes the queue path, which decides (behind a pending elder its fair
// order gives the run its turn; this one, running, holds the slot).
func TestARunWhoseSlotAnElderOfTheQueueTookLateTakesTheQueuePath(t *testing.T) {
	tw, exec := startCounted(t, "/lean-late-queued/", testWorkerOptions{}, "busy")
	at := time.Now().Add(300 * time.Millisecond).UTC()
	due := at.Add(-time.Second)
	elder := runs.ID("busy", due)
	lease := tw.holdSlotSince(t, "busy", elder, at.Add(100*time.Millisecond), due)
	e := queue.NewEntry(elder, tw.cfg.Job("busy"), nil, due, due, 1, runs.Schedule)
	running := e.Running("elsewhere", 0, at.Add(100*time.Millisecond))
	if _, err := tw.cli.Put(context.Background(), tw.layout.Entry("busy", elder), running.Encode(), clientv3.WithLease(lease)); err != nil {
		t.Fatal(err)
	}
	if _, queued := tw.assignBusy(t, at); !queued {
		t.Error("the run was skipped on the lean path: want the queue path to decide")
	}
	if n := exec.runs.Load(); n != 0 {
		t.Errorf("%d runs executed, want none", n)
	}
}

// A run claimed so late that its job's next tick, claimed ahead, holds
// the slot is skipped by its worker (no queue entry): no elder's turn is
// owed, and the queue path would skip it too.
func TestARunWhoseNextTickHoldsItsSlotIsSkippedAtOnce(t *testing.T) {
	tw, exec := startCounted(t, "/lean-next/", testWorkerOptions{}, "busy")
	at := time.Now().Add(300 * time.Millisecond).UTC()
	next := at.Add(time.Second)
	tw.holdSlotSince(t, "busy", runs.ID("busy", next), next, next)
	rec, queued := tw.assignBusy(t, at)
	if rec.Outcome != runs.Skipped {
		t.Errorf("recorded %s %q, want skipped", rec.Outcome, rec.Error)
	}
	if queued {
		t.Error("the run was queued: want it skipped on the lean path")
	}
	if n := exec.runs.Load(); n != 0 {
		t.Errorf("%d runs executed, want none", n)
	}
}

// Of a job of two slots the lean claim compares the one it picked: refused
// for it, the run is not skipped, for the other may be free, and the
// queue path runs it there.
func TestARunRefusedOneOfTwoSlotsRunsOnTheOther(t *testing.T) {
	exec := &countingExecutor{started: make(chan string, 8)}
	j := jobstest.Job("two", jobstest.FarTick(time.Now()))
	j.MaxConcurrency = 2
	tw := startTestWorker(t, "/lean-two/", j, exec, testWorkerOptions{})
	tw.holdSlot(t, "two", "two@earlier")
	at := time.Now().Add(300 * time.Millisecond).UTC()
	tw.assignJobs(t, tw.incarnation(t), at, "two")
	rec := waitRecord(t, tw.cli, tw.layout, runs.ID("two", at))
	if rec.Outcome != runs.Succeeded || rec.Slot != 1 {
		t.Errorf("recorded %s %q in slot %d, want succeeded in slot 1", rec.Outcome, rec.Error, rec.Slot)
	}
}

// lateKV answers the first commit that writes a claim marker (under
// prefix) only after late has run: a claim etcd refused before the
// instant, its answer in after it. ahead is what that marker said of its
// chunk (assign.MarkerAhead).
type lateKV struct {
	pb.KVClient
	prefix string
	once   sync.Once
	late   func()
	ahead  atomic.Bool
}

func (k *lateKV) Txn(ctx context.Context, req *pb.TxnRequest, opts ...grpc.CallOption) (*pb.TxnResponse, error) {
	resp, err := k.KVClient.Txn(ctx, req, opts...)
	if marker := putUnder(req, k.prefix); err == nil && marker != nil {
		k.once.Do(func() {
			k.ahead.Store(assign.MarkerAhead(marker.Value))
			k.late()
		})
	}
	return resp, err
}

// putUnder is the first put under prefix in req, or in a transaction it
// nests; nil if none.
func putUnder(req *pb.TxnRequest, prefix string) *pb.PutRequest {
	for _, op := range req.Success {
		if p := op.GetRequestPut(); p != nil && strings.HasPrefix(string(p.Key), prefix) {
			return p
		}
		if t := op.GetRequestTxn(); t != nil {
			if p := putUnder(t, prefix); p != nil {
				return p
			}
		}
	}
	return nil
}

// A chunk sent before its instant may be refused before it, whatever time
// its answer comes: its runs refused for their slot are tried again at the
// instant, not skipped. Here etcd refuses the chunk ahead (the tick
// before holds the slot), and its answer comes after the instant, once
// that run has ended: the run is claimed at the instant and succeeds.
// The instant is set once the worker and the slot are up, two seconds on:
// set before, a loaded machine (the race detector, other packages' tests)
// took so long starting them that the chunk went after it, was not ahead,
// and the run was rightly skipped.
func TestARunRefusedAheadIsTriedAgainWhenItsAnswerComesLate(t *testing.T) {
	const prefix = "/lean-ahead/"
	layout := keys.New(prefix)
	instant := make(chan time.Time, 1)
	kv := &lateKV{prefix: layout.Claimed()}
	kv.late = func() {
		at := <-instant
		for time.Now().Before(at.Add(50 * time.Millisecond)) { // the answer comes after the instant
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := kv.KVClient.DeleteRange(context.Background(), &pb.DeleteRangeRequest{Key: []byte(layout.SlotOf("busy", "", 0))}); err != nil {
			t.Error(err)
		}
	}
	exec := &countingExecutor{started: make(chan string, 8)}
	tw := startTestWorker(t, prefix, job("busy"), exec, testWorkerOptions{kv: func(inner pb.KVClient) pb.KVClient {
		kv.KVClient = inner
		return kv
	}})
	tw.holdSlot(t, "busy", "busy@earlier")
	at := time.Now().Add(2 * time.Second).UTC()
	instant <- at
	tw.assignJobs(t, tw.incarnation(t), at, "busy")
	rec := waitRecord(t, tw.cli, tw.layout, runs.ID("busy", at))
	if !kv.ahead.Load() {
		t.Fatalf("recorded %s, but the chunk was sent after the instant: this test needs it sent ahead", rec.Outcome)
	}
	if rec.Outcome != runs.Succeeded {
		t.Errorf("recorded %s %q, want succeeded: refused ahead, tried again at the instant", rec.Outcome, rec.Error)
	}
}
