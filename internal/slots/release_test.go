package slots

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// A release whose response is lost because its caller's context ended
// while etcd was slow is read back after that context (as a claim's and a
// keep's are): the slot gone while the lease lives, it applied, and the
// caller is told so, not that its slot was lost. Read under the ended
// context, the read-back failed at once and the worker logged a run that
// succeeded as lost and left it out of its run counts.
func TestALostReleaseResponseIsReadBackAfterItsContext(t *testing.T) {
	p := startProxied(t)
	h, entry, record := p.claimEntry(t)

	p.proxy.SetDelay(0, time.Second)
	relCtx, relCancel := context.WithTimeout(p.ctx, 300*time.Millisecond)
	defer relCancel()
	err := p.sem.Release(relCtx, h, clientv3.OpDelete(entry), clientv3.OpPut(record, "succeeded"))
	p.proxy.SetDelay(0, 0)
	if p.logs.Find("release outcome unknown; reading back") == nil {
		t.Fatalf("the response was not lost, so nothing was read back (err %v); logs: %v", err, p.logs.Records())
	}
	if err != nil {
		t.Fatalf("a release that applied, its answer lost: %v, want it read back as applied", err)
	}
	if cause := context.Cause(h.Context()); !errors.Is(cause, ErrReleased) {
		t.Errorf("the held slot ended with %v, want %v", cause, ErrReleased)
	}
	resp, err := p.observer.Get(p.ctx, record)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].Version != 1 {
		t.Errorf("the run's record: %v, want written once", resp.Kvs)
	}
}

// A release whose answer was lost, read back before it applied (its
// group commit still in flight), then applies: sent again, it is refused
// by its own delete, and it reads back why, whether the view saw that
// delete first or the new send was refused first. Told it applied, the
// worker counts the run; before, it logged a run that succeeded as "slot
// lost" (CI, 12-02).
func TestAReleaseThatAppliedAfterItsReadBackIsNotLost(t *testing.T) {
	t.Run("the view saw the delete first", func(t *testing.T) {
		r := releaseHeldInFlight(t)
		r.kv.gate <- struct{}{} // the first release applies
		r.awaitBlockers(t)
		applied, err := r.cli.Get(r.ctx, testLayout.Slot("j", 0))
		if err != nil {
			t.Fatal(err)
		}
		poll.Until(t, 30*time.Second, "the view seeing the release's delete", func() (bool, string) {
			r.sem.mu.Lock()
			defer r.sem.mu.Unlock()
			return r.sem.seen[slotsView] >= applied.Header.Revision, fmt.Sprintf("seen %d", r.sem.seen[slotsView])
		})
		if cause := context.Cause(r.h.Context()); errors.Is(cause, ErrLost) {
			t.Fatalf("the view ended the held slot with %v while its release was unanswered", cause)
		}
		r.releaseAgain(t, r.sem.Release(r.ctx, r.h, r.ops...), errGoneUnanswered)
	})
	t.Run("the second send was refused first", func(t *testing.T) {
		r := releaseHeldInFlight(t)
		again := make(chan error, 1)
		go func() { again <- r.sem.Release(r.ctx, r.h, r.ops...) }()
		waitWaiting(t, r.batch, 1) // behind the held commit
		r.kv.gate <- struct{}{}
		r.awaitBlockers(t)
		r.releaseAgain(t, <-again, ErrReleased)
	})
}

// A claim whose release went unanswered and whose caller gave up (a run
// dropped before its start tries once) is forgotten once the view sees its
// keys deleted, by that release or by the lease's end; kept releasing, it
// stayed in the semaphore's map of held keys for the process's life.
func TestAClaimWhoseUnansweredReleaseWasGivenUpIsForgotten(t *testing.T) {
	r := releaseHeldInFlight(t)
	if !r.tracked() {
		t.Fatal("the claim was forgotten while its release was still in flight")
	}
	r.kv.gate <- struct{}{} // the release applies; no caller waits for it
	r.awaitBlockers(t)
	poll.Until(t, 30*time.Second, "the claim forgotten", func() (bool, string) {
		return !r.tracked(), fmt.Sprintf("cause %v", context.Cause(r.h.Context()))
	})
	if cause := context.Cause(r.h.Context()); !errors.Is(cause, errGoneUnanswered) {
		t.Errorf("the held slot ended with %v, want %v (not a loss: its release may be what deleted it)", cause, errGoneUnanswered)
	}
}

// A delete the view saw while a Release call ran that then gave up, its
// release unanswered, ends the claim as that call returns: no later
// delete will come to end it.
func TestADeleteSeenDuringAReleaseThatGaveUpEndsTheClaim(t *testing.T) {
	cli, sess, ctx := claimSetup(t)
	sem := startSemaphore(t, cli)
	h, err := claimWait(ctx, sem, sess, Request{Job: "j", MaxConcurrency: 1, Value: Value{RunID: "j@1"}})
	if err != nil {
		t.Fatal(err)
	}
	sem.mu.Lock()
	h.releasing, h.inRelease, h.releaseUnanswered = true, true, true
	sem.lostLocked(h) // the view's delete, while the call runs
	sem.mu.Unlock()
	if cause := context.Cause(h.Context()); cause != nil {
		t.Fatalf("the claim ended with %v while its Release call ran, want the call to tell", cause)
	}
	sem.unrelease(h) // the call gives up
	sem.mu.Lock()
	_, kept := sem.held[h.Key()]
	sem.mu.Unlock()
	if kept {
		t.Error("the claim stayed in held after its Release call gave up with the delete seen")
	}
	if cause := context.Cause(h.Context()); !errors.Is(cause, errGoneUnanswered) {
		t.Errorf("the held slot ended with %v, want %v", cause, errGoneUnanswered)
	}
}

func (r *inFlightRelease) tracked() bool {
	r.sem.mu.Lock()
	defer r.sem.mu.Unlock()
	return r.sem.held[r.h.Key()] == r.h
}

// inFlightRelease is a claim whose release went unanswered and is held in
// its group commit until the test lets it go (kv.gate), beside two
// neighbours' commits (blocker) that keep the commit alive.
type inFlightRelease struct {
	cli     *clientv3.Client
	kv      *holdNextKV
	sem     *Semaphore
	batch   *txnbatch.Committer
	h       *Held
	ctx     context.Context
	ops     []clientv3.Op
	record  string
	blocker chan error
}

// releaseHeldInFlight claims j's run j@1 and sends its release with ops
// (by default the entry's delete and a record) until its caller gives up.
func releaseHeldInFlight(t *testing.T, ops ...clientv3.Op) *inFlightRelease {
	t.Helper()
	r := &inFlightRelease{cli: etcdtest.Start(t).Client(), blocker: make(chan error, 2)}
	r.kv = &holdNextKV{KVClient: clientv3.RetryKVClient(r.cli), gate: make(chan struct{}), started: make(chan struct{}, 1)}
	r.sem, r.batch = batchedSemaphore(t, r.cli, r.kv)
	sess, ctx := sessionFor(t, r.cli)
	r.ctx = ctx
	entry, record := testLayout.Entry("j", "j@1"), testLayout.Record("j", "j@1")
	r.record, r.ops = record, ops
	if len(ops) == 0 {
		r.ops = []clientv3.Op{clientv3.OpDelete(entry), clientv3.OpPut(record, "succeeded")}
	}
	read, err := r.cli.Put(ctx, entry, "pending")
	if err != nil {
		t.Fatal(err)
	}
	if r.h, err = r.sem.Claim(ctx, sess, onEntry(Request{Job: "j", MaxConcurrency: 1, Value: Value{RunID: "j@1"}}, entry, read.Header.Revision)); err != nil {
		t.Fatal(err)
	}
	neighbour := func(key string) {
		_, err := r.batch.Commit(ctx, txnbatch.Txn{Then: []clientv3.Op{clientv3.OpPut(key, "x")}})
		r.blocker <- err
	}
	r.kv.holdNext.Store(true)
	go neighbour("/other/1")
	<-r.kv.started
	relCtx, relCancel := context.WithCancel(ctx)
	defer relCancel()
	relErr := make(chan error, 1)
	go func() { relErr <- r.sem.Release(relCtx, r.h, r.ops...) }()
	waitWaiting(t, r.batch, 1)
	go neighbour("/other/2")
	waitWaiting(t, r.batch, 2)
	r.kv.holdNext.Store(true)
	r.kv.gate <- struct{}{}
	<-r.kv.started // the release's commit, held
	relCancel()
	if err := <-relErr; err == nil {
		t.Fatal("a release held in flight was answered")
	}
	return r
}

func (r *inFlightRelease) awaitBlockers(t *testing.T) {
	t.Helper()
	for range 2 {
		if err := <-r.blocker; err != nil {
			t.Fatal(err)
		}
	}
}

// releaseAgain checks the second release's err: told the run's release
// applied, its record written once, the claim ended with cause.
func (r *inFlightRelease) releaseAgain(t *testing.T, err, cause error) {
	t.Helper()
	if err != nil {
		t.Fatalf("a release sent again after its first send applied: %v, want it read back as applied", err)
	}
	if got := context.Cause(r.h.Context()); !errors.Is(got, cause) {
		t.Errorf("the held slot ended with %v, want %v", got, cause)
	}
	resp, err := r.cli.Get(r.ctx, r.record)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].Version != 1 {
		t.Errorf("the run's record: %v, want written once", resp.Kvs)
	}
}
