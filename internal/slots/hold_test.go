package slots

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// A strict retry's keep whose answer is lost (it arrives after the
// caller's deadline) is read back (docs/design.md#the-safety-rules, rule 7): the entry the claim wrote
// has changed under keys still held, so the keep applied, and the caller
// is told so rather than left to release the slot and write the attempt's
// record again. Called again (as the worker does while an outcome is
// unknown), the keep writes nothing: it compares the entry as the claim
// left it.
func TestAKeepWhoseAnswerWasLostAppliesOnce(t *testing.T) {
	p := startProxied(t)
	sem, proxy, observer, logs, ctx := p.sem, p.proxy, p.observer, p.logs, p.ctx
	h, entry, record := p.claimEntry(t)

	end := []clientv3.Op{clientv3.OpPut(entry, "retry holding the slot"), clientv3.OpPut(record, "attempt 1 failed")}
	proxy.SetDelay(0, time.Second)
	keepCtx, keepCancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer keepCancel()
	err := sem.Keep(keepCtx, h, entry, end...)
	proxy.SetDelay(0, 0)
	if logs.Find("keep outcome unknown; reading back") == nil {
		t.Fatalf("the answer was not lost, so nothing was read back (err %v); logs: %v", err, logs.Records())
	}
	if err != nil {
		t.Fatalf("a keep that applied, its answer lost: %v; the worker would release the kept slot", err)
	}
	if err := sem.Keep(ctx, h, entry, end...); err != nil {
		t.Fatalf("the keep called again: %v", err)
	}

	keys := keysUnder(t, observer, testLayout.Slot("j", 0))
	if keys[h.Key()] != h.Token {
		t.Errorf("slot keys after the keep: %v, want %s kept with token %d", keys, h.Key(), h.Token)
	}
	resp, err := observer.Get(ctx, record)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].Version != 1 {
		t.Errorf("the attempt's record after a lost answer and a second send: %v, want written once", resp.Kvs)
	}
}

// A keep whose caller gave up while its group commit still waited to be
// sent applies after its read-back found it not applied: Keep says the
// outcome is unknown (never that it did not apply, which would have the
// worker release the slot and write the record again), and called again
// it finds its earlier send applied and writes nothing more.
func TestAKeepStillInFlightIsNeverSaidNotToHaveApplied(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	kv := &heldKV{KVClient: clientv3.RetryKVClient(cli), gate: make(chan struct{}), started: make(chan struct{}, 64)}
	sem, batch := batchedSemaphore(t, cli, kv)
	sess, ctx := sessionFor(t, cli)
	let := func() { kv.gate <- struct{}{} }

	entry, record := testLayout.Entry("j", "j@1"), testLayout.Record("j", "j@1")
	read, err := cli.Put(ctx, entry, "pending")
	if err != nil {
		t.Fatal(err)
	}
	var h *Held
	claimed := make(chan error, 1)
	go func() {
		var err error
		h, err = sem.Claim(ctx, sess, onEntry(Request{Job: "j", MaxConcurrency: 1, Value: Value{RunID: "j@1"}}, entry, read.Header.Revision))
		claimed <- err
	}()
	<-kv.started
	let()
	if err := <-claimed; err != nil {
		t.Fatal(err)
	}

	// A commit in flight; the keep and a neighbour queue behind it and go
	// in the next commit, which the neighbour keeps waiting for.
	blocker := make(chan error, 2)
	go func() {
		_, err := batch.Commit(ctx, txnbatch.Txn{Then: []clientv3.Op{clientv3.OpPut("/other/1", "x")}})
		blocker <- err
	}()
	<-kv.started
	keepCtx, keepCancel := context.WithTimeout(ctx, 2*time.Second)
	defer keepCancel()
	kept := make(chan error, 1)
	end := []clientv3.Op{clientv3.OpPut(entry, "retry holding the slot"), clientv3.OpPut(record, "attempt 1 failed")}
	go func() { kept <- sem.Keep(keepCtx, h, entry, end...) }()
	waitWaiting(t, batch, 1)
	go func() {
		_, err := batch.Commit(ctx, txnbatch.Txn{Then: []clientv3.Op{clientv3.OpPut("/other/2", "x")}})
		blocker <- err
	}()
	waitWaiting(t, batch, 2)
	let()
	<-kv.started // the keep's commit, held until its caller gave up
	err = <-kept
	if !errors.Is(err, ErrIndeterminate) {
		t.Fatalf("a keep still in flight, read back before it applied: %v, want %v", err, ErrIndeterminate)
	}
	let()
	for range 2 {
		if err := <-blocker; err != nil {
			t.Fatal(err)
		}
	}
	again := make(chan error, 1)
	go func() { again <- sem.Keep(ctx, h, entry, end...) }()
	<-kv.started
	let()
	if err := <-again; err != nil {
		t.Fatalf("the keep called again after its earlier send applied: %v", err)
	}
	resp, err := cli.Get(ctx, record)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].Version != 1 {
		t.Errorf("the attempt's record: %v, want written once", resp.Kvs)
	}
	if keys := keysUnder(t, cli, testLayout.Slot("j", 0)); keys[h.Key()] != h.Token {
		t.Errorf("slot keys after the keep: %v, want %s kept", keys, h.Key())
	}
}

// A release whose answer was lost may apply yet (its group commit sends it
// after its caller gave up). A keep sent after it could apply first, in a
// commit of its own, and the release then delete the slot the retry holds
// and write the attempt's record a second time. So once a release of the
// claim went unanswered Keep sends nothing and errs as a keep that did not
// apply (docs/design.md#the-safety-rules, rule 7): the worker releases
// again, and the record is written once.
func TestNoKeepIsSentAfterAReleaseWhoseAnswerWasLost(t *testing.T) {
	entry, record := testLayout.Entry("j", "j@1"), testLayout.Record("j", "j@1")
	released := []clientv3.Op{clientv3.OpPut(entry, "pending retry"), clientv3.OpPut(record, "attempt 1 failed")}
	r := releaseHeldInFlight(t, released...)
	cli, sem, batch, h, ctx := r.cli, r.sem, r.batch, r.h, r.ctx

	kept := []clientv3.Op{clientv3.OpPut(entry, "retry holding the slot"), clientv3.OpPut(record, "attempt 1 failed")}
	keepErr := make(chan error, 1)
	go func() { keepErr <- sem.Keep(ctx, h, entry, kept...) }()
	poll.Until(t, 30*time.Second, "the keep answered or queued", func() (bool, string) {
		return len(keepErr) == 1 || batch.Waiting() == 1, "neither"
	})
	r.kv.gate <- struct{}{} // the release goes on
	err := <-keepErr
	if err == nil || errors.Is(err, ErrNotOwner) || errors.Is(err, ErrIndeterminate) {
		t.Fatalf("a keep after a release whose answer was lost: %v, want an error before sending that has the worker release again", err)
	}
	r.awaitBlockers(t)
	if err := sem.Release(ctx, h, released...); err != nil {
		t.Fatalf("the release sent again: %v, want nil: the first applied (read back), its record written", err)
	}
	if keys := keysUnder(t, cli, testLayout.Slot("j", 0)); len(keys) != 0 {
		t.Errorf("slot keys after the releases: %v, want none", keys)
	}
	resp, err := cli.Get(ctx, record)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].Version != 1 {
		t.Errorf("the attempt's record: %v, want written once", resp.Kvs)
	}
}

// holdNextKV holds the next commit once holdNext is set, until the test
// lets it go; the others pass.
type holdNextKV struct {
	pb.KVClient
	holdNext atomic.Bool
	gate     chan struct{}
	started  chan struct{}
}

func (k *holdNextKV) Txn(ctx context.Context, req *pb.TxnRequest, opts ...grpc.CallOption) (*pb.TxnResponse, error) {
	if k.holdNext.CompareAndSwap(true, false) {
		k.started <- struct{}{}
		select {
		case <-k.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return k.KVClient.Txn(ctx, req, opts...)
}

// DropKept gives up a hold's slot and resource slots only while they are
// still the hold's incarnation: a slot claimed since by another run, on
// the same index, stays. Holds reads the same from the view.
func TestDropKeptTakesOnlyTheHoldsIncarnation(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client()
	sem, err := New(cli, testLayout, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	runSemaphore(t, sem)
	sess, ctx := sessionFor(t, cli)
	claim := func(run string) *Held {
		var h *Held
		var err error
		poll.For(t, 10*time.Second, "a claim once the view shows room", func() bool {
			h, err = sem.Claim(ctx, sess, Request{Job: "j", MaxConcurrency: 1, Resources: []Resource{{Name: "db", Limit: 1}}, Value: Value{RunID: run}})
			return !errors.Is(err, ErrFull)
		})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	first := claim("j@1")
	kept := Kept{Job: "j", Slot: first.Slot, Token: first.Token, Resources: first.Resources}
	poll.For(t, 10*time.Second, "the view to show the first claim", func() bool { return sem.Holds(ctx, kept) })
	if err := sem.Release(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := claim("j@2")
	if err := sem.DropKept(ctx, kept); err != nil {
		t.Fatal(err)
	}
	if got := keysUnder(t, cli, testLayout.Slot("j", 0)); got[second.Key()] != second.Token {
		t.Fatalf("slot keys after dropping the first claim's hold: %v, want %s at %d (claimed since)", got, second.Key(), second.Token)
	}
	poll.For(t, 10*time.Second, "the view to show the second claim", func() bool {
		return sem.Holds(ctx, Kept{Job: "j", Slot: second.Slot, Token: second.Token})
	})
	if sem.Holds(ctx, kept) {
		t.Error("Holds: true for a hold whose slot was claimed since")
	}
	if err := sem.DropKept(ctx, Kept{Job: "j", Slot: second.Slot, Token: second.Token, Resources: second.Resources}); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{testLayout.Slot("j", 0), testLayout.Resources()} {
		if got := keysUnder(t, cli, prefix); len(got) != 0 {
			t.Errorf("keys under %s after dropping the second claim's hold: %v, want none", prefix, got)
		}
	}
}
