package slots

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// A view that fell behind a compaction cannot resume its watch; follow says
// so (Run then reads again) and the fresh read is complete (docs/design.md#the-safety-rules, rule 8).
func TestViewStartsOverAfterCompaction(t *testing.T) {
	ctx, cli, sem := loadedView(t)
	for _, k := range []string{testLayout.Slot("j", 0), testLayout.Slot("j", 1), testLayout.ResourceSlot("db", 0)} {
		if _, err := cli.Put(ctx, k, `{"run_id":"j@1"}`); err != nil {
			t.Fatal(err)
		}
	}
	del, err := cli.Delete(ctx, testLayout.Slot("j", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, del.Header.Revision); err != nil {
		t.Fatal(err)
	}
	if err := sem.follow(ctx); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("follow from a compacted revision: err = %v, want %v", err, rpctypes.ErrCompacted)
	}
	if err := sem.load(ctx); err != nil {
		t.Fatal(err)
	}
	if sem.viewInUse("j") != 1 || sem.ResourceInUse("db") != 1 || len(sem.viewList()) != 2 {
		t.Fatalf("after the re-read: job %d, resource %d, list %v", sem.viewInUse("j"), sem.ResourceInUse("db"), sem.viewList())
	}
}

// Claim waits for the view's first read rather than trusting an empty one.
func TestClaimWaitsForTheView(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client()
	sem, err := New(cli, testLayout, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sess := newSession(t, cli, 5*time.Second, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := sem.Claim(ctx, sess, Request{Job: "j", MaxConcurrency: 1, Value: Value{RunID: "j@1"}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("claim before the view was read: err = %v", err)
	}
	if n := len(keysUnder(t, cli, testPrefix)); n != 0 {
		t.Fatalf("%d keys written without a view", n)
	}
}

// A view that lags may deliver the delete of a slot key's previous holder
// after this replica claimed the key anew. That delete is not a loss of the
// new claim: only a delete after the claim's own revision is.
func TestLaggingDeleteOfAnEarlierHolderIsNotALoss(t *testing.T) {
	ctx, cli, sem := loadedView(t) // the view stops at its read until followView below
	// An earlier holder comes and goes after the view's read.
	key := testLayout.Slot("j", 0)
	if _, err := cli.Put(ctx, key, `{"run_id":"j@0"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	sess := newSession(t, cli, 5*time.Second, time.Second)
	held, err := sem.Claim(ctx, sess, Request{Job: "j", MaxConcurrency: 1, Value: Value{RunID: "j@1"}})
	if err != nil {
		t.Fatal(err)
	}
	// Now the view catches up: the earlier holder's put and delete, then
	// this claim's put.
	followView(t, ctx, sem)
	waitListed(t, sem, "the view to show the claim", "j", held.Token)
	if err := held.Context().Err(); err != nil {
		t.Fatalf("the claim (token %d) was ended by the delete of an earlier holder: %v (%v)", held.Token, err, context.Cause(held.Context()))
	}
}

// A claim's key may be deleted (its lease expired, an operator removed it)
// and the view may apply that delete before the claim is tracked. The view
// then has nothing left to report; track itself must find the claim gone.
func TestDeleteSeenBeforeTrackEndsHolder(t *testing.T) {
	ctx, cli, sem := loadedView(t)
	sess := newSession(t, cli, 5*time.Second, time.Second)
	key := testLayout.Slot("j", 0)
	// What a claim writes, then the delete, then a marker the view shows
	// only once it has applied everything before it.
	put, err := cli.Put(ctx, key, `{"run_id":"j@1"}`, clientv3.WithLease(sess.Lease()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, testLayout.Slot("marker", 0), `{"run_id":"marker@1"}`); err != nil {
		t.Fatal(err)
	}
	followView(t, ctx, sem)
	waitListed(t, sem, "the view to apply the marker", "marker", 0)

	held := newHeld(sess, "j", 0, put.Header.Revision, nil, []string{key}, Value{RunID: "j@1"})
	sem.track(held)
	if cause := context.Cause(held.Context()); !errors.Is(cause, ErrLost) {
		t.Fatalf("holder of a slot deleted before it was tracked: cause %v, want %v", cause, ErrLost)
	}

	// A claim the view has not reached yet is tracked as held.
	put2, err := cli.Put(ctx, key, `{"run_id":"j@2"}`, clientv3.WithLease(sess.Lease()))
	if err != nil {
		t.Fatal(err)
	}
	live := newHeld(sess, "j", 0, put2.Header.Revision, nil, []string{key}, Value{RunID: "j@2"})
	sem.track(live)
	waitListed(t, sem, "the view to show the live claim", "j", live.Token)
	if err := live.Context().Err(); err != nil {
		t.Fatalf("a live claim was ended: %v (%v)", err, context.Cause(live.Context()))
	}
}

// The two prefixes are watched apart, so one can be ahead of the other:
// a resource key the resources watch has not reached yet is not missing.
func TestTrackJudgesEachKeyByItsOwnWatch(t *testing.T) {
	_, cli, sem := loadedView(t)
	sess := newSession(t, cli, 5*time.Second, time.Second)
	const token = 100
	jobKey, resKey := testLayout.Slot("j", 0), testLayout.ResourceSlot("db", 0)
	track := func(slotsSeen, resourcesSeen int64) *Held {
		sem.mu.Lock()
		sem.entries = map[string]entry{jobKey: {token: token}}
		sem.seen = [3]int64{slotsView: slotsSeen, resourcesView: resourcesSeen}
		sem.mu.Unlock()
		h := newHeld(sess, "j", 0, token, []HeldResource{{Name: "db"}}, []string{jobKey, resKey}, Value{RunID: "j@1"})
		sem.track(h)
		return h
	}
	if h := track(token+5, token-1); h.Context().Err() != nil {
		t.Fatalf("resources watch behind the claim: the claim was ended (%v)", context.Cause(h.Context()))
	}
	if h := track(token+5, token+5); !errors.Is(context.Cause(h.Context()), ErrLost) {
		t.Fatalf("resources watch past the claim without its key: cause %v, want %v", context.Cause(h.Context()), ErrLost)
	}
}

// loadedView is a semaphore whose view has been read once and does not
// follow the watch: a test drives load and follow itself.
func loadedView(t *testing.T) (context.Context, *clientv3.Client, *Semaphore) {
	t.Helper()
	cli := etcdtest.Start(t).Client()
	sem, err := New(cli, testLayout, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if err := sem.load(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx, cli, sem
}

// followView lets the view follow the watch from where it stands until the
// test ends.
func followView(t *testing.T, ctx context.Context, sem *Semaphore) {
	ctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sem.follow(ctx) }()
	t.Cleanup(func() { stop(); <-done })
}

// waitListed waits until the view lists a slot of job, with token when it
// is not zero.
func waitListed(t *testing.T, sem *Semaphore, what, job string, token int64) {
	t.Helper()
	poll.For(t, 10*time.Second, what, func() bool {
		for _, s := range sem.viewList() {
			if s.Job == job && (token == 0 || s.FencingToken == token) {
				return true
			}
		}
		return false
	})
}

// A job's slots in use count every concurrency key of the job and nothing
// of another job whose name starts with its own, as the watch moves them
// and after a fresh read.
func TestInUseCountsEveryKeyOfAJobAndOnlyItsOwn(t *testing.T) {
	ctx, cli, sem := loadedView(t)
	followView(t, ctx, sem)
	l := testLayout
	for _, k := range []string{l.SlotOf("j", "", 0), l.SlotOf("j", "k1", 0), l.SlotOf("j", "k2", 0), l.SlotOf("j", "k2", 1), l.SlotOf("jj", "", 0), testLayout.ResourceSlot("j", 0)} {
		if _, err := cli.Put(ctx, k, `{"run_id":"x"}`); err != nil {
			t.Fatal(err)
		}
	}
	counts := func() (int, int, int) { return sem.viewInUse("j"), sem.viewInUse("jj"), sem.ResourceInUse("j") }
	poll.For(t, 10*time.Second, "the view to count 4, 1 and 1", func() bool {
		j, jj, r := counts()
		return j == 4 && jj == 1 && r == 1
	})
	if _, err := cli.Delete(ctx, l.SlotOf("j", "k2", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, l.SlotOf("jj", "", 0)); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 10*time.Second, "the view to count 3, 0 and 1 after two deletes", func() bool {
		j, jj, r := counts()
		return j == 3 && jj == 0 && r == 1
	})
	if err := sem.load(ctx); err != nil {
		t.Fatal(err)
	}
	if j, jj, r := counts(); j != 3 || jj != 0 || r != 1 {
		t.Fatalf("after a fresh read: j %d, jj %d, resource j %d; want 3, 0, 1", j, jj, r)
	}
}
