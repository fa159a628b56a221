package slots

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// The job slots' view is read and followed only while something wants it:
// the need WithDemand gives (a replica's: a queue entry), or a claim, for
// the linger after it. Unwanted, it holds nothing and follows nothing, so
// a replica whose runs are all lean decodes no slot key's event; wanted
// again, it is read afresh.
func TestTheJobSlotsViewIsKeptOnlyWhileWanted(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	var need atomic.Bool
	const linger = 300 * time.Millisecond
	sem, err := New(cli, testLayout, nil, nil, WithDemand(need.Load, linger))
	if err != nil {
		t.Fatal(err)
	}
	runView(t, sem)
	put := func(key string) {
		t.Helper()
		if _, err := cli.Put(t.Context(), key, `{"run_id":"x"}`); err != nil {
			t.Fatal(err)
		}
	}
	// Unwanted: a slot key put before a resource key is not in the view
	// once the resources' watch shows the later key.
	put(testLayout.Slot("j", 0))
	put(testLayout.ResourceSlot("db", 0))
	poll.For(t, 30*time.Second, "the resources' view of db", func() bool { return sem.ResourceInUse("db") == 1 })
	if sem.Loaded() || sem.viewInUse("j") != 0 {
		t.Fatalf("nothing wanted the job slots' view: loaded %v, j's slots %d", sem.Loaded(), sem.viewInUse("j"))
	}

	// Needed, though no claim wants it: read, then followed.
	need.Store(true)
	poll.For(t, 30*time.Second, "the job slots' view, read", func() bool { return sem.Loaded() && sem.viewInUse("j") == 1 })
	put(testLayout.Slot("j", 1))
	poll.For(t, 30*time.Second, "the view to follow a second slot of j", func() bool { return sem.viewInUse("j") == 2 })

	// No longer needed: dropped after the linger.
	need.Store(false)
	poll.For(t, 30*time.Second, "the view dropped", func() bool { return !sem.Loaded() && sem.viewInUse("j") == 0 })

	// A claim wants it: read before the claim picks a slot, so the claim
	// takes the one slot of three not held, at once.
	sess := newSession(t, cli, 5*time.Second, time.Second)
	claimCtx, cancelClaim := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancelClaim()
	h, err := sem.Claim(claimCtx, sess, Request{Job: "j", MaxConcurrency: 3, Value: Value{RunID: "j@1"}})
	if err != nil {
		t.Fatal(err)
	}
	if h.Slot != 2 {
		t.Errorf("claimed slot %d, want 2, the one the read view shows free", h.Slot)
	}
	if !sem.Loaded() {
		t.Error("a claim did not want the job slots' view")
	}
	if err := sem.Release(claimCtx, h); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, "the view dropped after the claim's linger", func() bool { return !sem.Loaded() })
}

// WithDemand refuses a linger it cannot keep.
func TestWithDemandNeedsALinger(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	if _, err := New(cli, testLayout, nil, nil, WithDemand(nil, 0)); err == nil {
		t.Fatal("a linger of 0 was taken")
	}
}
