package worker

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// keptSlot puts the job's slot 0 on lease, as a failed attempt's claim
// left it for a strict retry, and returns the hold its retry's entry names.
func keptSlot(t *testing.T, tw *testWorker, job, holder string, lease clientv3.LeaseID) queue.Hold {
	t.Helper()
	v := slots.Value{RunID: runs.ID(job, time.Now()), Holder: holder, StartedAt: time.Now().UTC()}
	resp, err := tw.cli.Put(context.Background(), tw.layout.Slot(job, 0), string(v.Encode()), clientv3.WithLease(lease))
	if err != nil {
		t.Fatal(err)
	}
	return queue.Hold{Holder: holder, Lease: int64(lease), Slot: 0, Token: resp.Header.Revision}
}

// heldRetry is a pending retry of tw's job due at, waiting on hold.
func heldRetry(tw *testWorker, at time.Time, hold queue.Hold) *queue.Entry {
	e := queue.NewEntry(runs.ID(tw.cfg.Jobs[0].Name, at), &tw.cfg.Jobs[0], nil, at, at, 2, runs.Retry)
	e.Hold = &hold
	return e
}

func (tw *testWorker) slotToken(t *testing.T, job string) int64 {
	t.Helper()
	resp, err := tw.cli.Get(context.Background(), tw.layout.Slot(job, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return 0
	}
	return resp.Kvs[0].CreateRevision
}

// A retry whose slot another replica kept waits for that replica while
// the slot lives, though the job has room for a fresh claim: run afresh,
// it would leave the kept slot taking a place for nothing. When the
// holder's lease ends, the slot with it, the retry claims afresh and runs.
func TestARetryHeldElsewhereWaitsForItsHolder(t *testing.T) {
	j := job("strict")
	j.MaxConcurrency = 2
	j.Retries.Max, j.Retries.HoldSlot = 2, true
	exec := &countingExecutor{started: make(chan string, 8)}
	tw := startTestWorker(t, "/kept-elsewhere/", j, exec, testWorkerOptions{})
	ghost, err := tw.cli.Grant(context.Background(), 60)
	if err != nil {
		t.Fatal(err)
	}
	retry := heldRetry(tw, time.Now().UTC(), keptSlot(t, tw, "strict", "ghost", ghost.ID))
	tw.put(t, retry)
	key := tw.layout.Entry("strict", retry.RunID)
	poll.For(t, 30*time.Second, "the retry parked behind the kept slot, or run", func() bool { return tw.w.isParked(key) || exec.runs.Load() > 0 })
	if n := exec.runs.Load(); n != 0 {
		t.Fatalf("the retry ran %d times while another replica's kept slot lived", n)
	}
	if _, err := tw.cli.Revoke(context.Background(), ghost.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exec.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the retry did not run once the holder's lease ended")
	}
}

// The holder gives up a slot it kept for a retry that no longer waits on
// it: cancelled (its entry deleted), or claimed afresh by another worker.
// Kept, the slot would take one of the job's places until the holder's
// session ended: with max_concurrency 1, the job would run no more.
func TestAHolderGivesUpTheSlotItsRetryNoLongerWaitsOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		then func(t *testing.T, tw *testWorker, e *queue.Entry)
	}{
		{"cancelled", func(t *testing.T, tw *testWorker, e *queue.Entry) {
			if _, err := tw.cli.Delete(context.Background(), tw.layout.Entry(e.Job, e.RunID)); err != nil {
				t.Fatal(err)
			}
		}},
		{"claimed afresh elsewhere", func(t *testing.T, tw *testWorker, e *queue.Entry) {
			tw.put(t, e.Running("w2", 1, time.Now()))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := job("strict")
			j.Retries.Max, j.Retries.HoldSlot = 2, true
			tw := startTestWorker(t, "/kept-left/", j, &countingExecutor{started: make(chan string, 8)}, testWorkerOptions{})
			sess, err := tw.sess.Current(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			// Due in an hour: the holder has no reason to claim it now.
			hold := keptSlot(t, tw, "strict", "w1", sess.Lease())
			retry := heldRetry(tw, time.Now().Add(time.Hour).UTC(), hold)
			tw.put(t, retry)
			key := tw.layout.Entry("strict", retry.RunID)
			poll.For(t, 30*time.Second, "the view to hold the retry", func() bool { return tw.view.Get(key) != nil })
			if got := tw.slotToken(t, "strict"); got != hold.Token {
				t.Fatalf("kept slot token %d, want %d: given up while its retry waited on it", got, hold.Token)
			}
			tc.then(t, tw, retry)
			poll.For(t, 30*time.Second, "the kept slot given up", func() bool { return tw.slotToken(t, "strict") != hold.Token })
		})
	}
}

// keptLeft names a hold to give up only when the holder's pending retry
// was replaced by an entry naming neither the hold nor a run on it.
func TestKeptLeft(t *testing.T) {
	hold := &queue.Hold{Holder: "w1", Lease: 7, Slot: 1, Token: 40}
	other := &queue.Hold{Holder: "w2", Lease: 8, Slot: 1, Token: 40}
	item := func(state queue.State, h *queue.Hold, heldToken int64) *queue.Item {
		return &queue.Item{Entry: &queue.Entry{Job: "j", State: state, Hold: h, HeldToken: heldToken}}
	}
	for _, tc := range []struct {
		name    string
		q, prev *queue.Item
		want    bool
	}{
		{"deleted", nil, item(queue.Pending, hold, 0), true},
		{"claimed afresh", item(queue.Running, nil, 0), item(queue.Pending, hold, 0), true},
		{"claimed on the hold", item(queue.Running, nil, 40), item(queue.Pending, hold, 0), false},
		{"rewritten, still held", item(queue.Pending, hold, 0), item(queue.Pending, hold, 0), false},
		{"another's hold", nil, item(queue.Pending, other, 0), false},
		{"no hold", nil, item(queue.Pending, nil, 0), false},
		{"a run ended", nil, item(queue.Running, nil, 40), false},
		{"new", item(queue.Pending, hold, 0), nil, false},
	} {
		if _, got := keptLeft("w1", tc.q, tc.prev); got != tc.want {
			t.Errorf("%s: gives up the hold %v, want %v", tc.name, got, tc.want)
		}
	}
}

// isParked reports whether the entry at key waits parked.
func (w *Worker) isParked(key string) bool {
	w.queue.mu.Lock()
	defer w.queue.mu.Unlock()
	_, ok := w.queue.parked[key]
	return ok
}
