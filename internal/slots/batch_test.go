package slots

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/txnbatch"
)

// heldKV holds each commit until the test lets one go, and counts them:
// claims submitted meanwhile queue behind it and go in one commit.
type heldKV struct {
	pb.KVClient
	gate    chan struct{}
	started chan struct{}
}

func (k *heldKV) Txn(ctx context.Context, req *pb.TxnRequest, opts ...grpc.CallOption) (*pb.TxnResponse, error) {
	k.started <- struct{}{}
	select {
	case <-k.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return k.KVClient.Txn(ctx, req, opts...)
}

// batchedSemaphore is a running semaphore whose transactions go through a
// group committer on kv, one commit in flight at a time.
func batchedSemaphore(t *testing.T, cli *clientv3.Client, kv pb.KVClient) (*Semaphore, *txnbatch.Committer) {
	t.Helper()
	batch, err := txnbatch.NewOn(kv, cli, txnbatch.Options{InFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(batch.Close)
	sem, err := New(cli, testLayout, nil, nil, WithCommitter(batch))
	if err != nil {
		t.Fatal(err)
	}
	runSemaphore(t, sem)
	return sem, batch
}

func waitWaiting(t *testing.T, c *txnbatch.Committer, n int) {
	t.Helper()
	poll.Until(t, 30*time.Second, fmt.Sprintf("%d claims waiting on the committer", n), func() (bool, string) {
		got := c.Waiting()
		return got == n, fmt.Sprintf("%d waiting", got)
	})
}

// Claims and releases that reach the committer together share one commit
// and one revision, and each keeps its own compares: a claim whose caller's
// compare fails, and a claim of a slot a neighbour in the queue takes, end
// as they would alone, without touching the others. Tokens are the
// commit's revision, the slot keys' CreateRevision (rule 3).
func TestBatchedClaimsKeepTheirOwnCompares(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	kv := &heldKV{KVClient: clientv3.RetryKVClient(cli), gate: make(chan struct{}), started: make(chan struct{}, 64)}
	sem, batch := batchedSemaphore(t, cli, kv)
	sess, ctx := sessionFor(t, cli)
	let := func() { kv.gate <- struct{}{} }

	// One claim in flight, the others queue behind it.
	first := Request{Job: "first", MaxConcurrency: 1, Value: Value{RunID: "first@1"}}
	var wg sync.WaitGroup
	var firstHeld *Held
	var firstErr error
	wg.Go(func() { firstHeld, firstErr = sem.Claim(ctx, sess, first) })
	<-kv.started

	entry := testLayout.Entry("a", "a@1")
	if _, err := cli.Put(ctx, entry, "pending"); err != nil {
		t.Fatal(err)
	}
	reqs := []Request{
		// a: takes its slot and rewrites its entry.
		{Job: "a", MaxConcurrency: 1, Value: Value{RunID: "a@1"},
			If:      []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(entry), ">", 0)},
			ThenFor: func(slot int) []clientv3.Op { return []clientv3.Op{clientv3.OpPut(entry, runningOn(slot))} }},
		// b: its caller's compare fails (no such entry).
		{Job: "b", MaxConcurrency: 1, Value: Value{RunID: "b@1"},
			If: []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(testLayout.Entry("b", "b@1")), ">", 0)}},
		// c1 and c2 want the same slot: c2 waits for c1's commit, finds it
		// taken and, the job being full, gives up.
		{Job: "c", MaxConcurrency: 1, Value: Value{RunID: "c@1"}},
		{Job: "c", MaxConcurrency: 1, Value: Value{RunID: "c@2"}},
	}
	type result struct {
		h   *Held
		err error
	}
	results := make([]result, len(reqs))
	for i, r := range reqs {
		wg.Go(func() {
			h, err := sem.Claim(ctx, sess, r)
			results[i] = result{h, err}
		})
		waitWaiting(t, batch, i+1)
	}
	let() // first
	<-kv.started
	let() // a, b, c1 together; c2 conflicts with c1
	<-kv.started
	let() // c2 alone: taken, and the retry finds the job full by the read
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("first: %v", firstErr)
	}
	a, b, c1, c2 := results[0], results[1], results[2], results[3]
	if a.err != nil || c1.err != nil {
		t.Fatalf("a: %v, c1: %v", a.err, c1.err)
	}
	if !errors.Is(b.err, ErrConflict) {
		t.Fatalf("b: %v, want %v", b.err, ErrConflict)
	}
	if !errors.Is(c2.err, ErrFull) {
		t.Fatalf("c2: %v, want %v", c2.err, ErrFull)
	}
	if a.h.Token != c1.h.Token || a.h.Token == firstHeld.Token {
		t.Fatalf("tokens first %d, a %d, c1 %d: want a and c1 to share a commit after first's", firstHeld.Token, a.h.Token, c1.h.Token)
	}
	held := keysUnder(t, cli, testPrefix)
	for _, h := range []*Held{firstHeld, a.h, c1.h} {
		if held[h.Key()] != h.Token {
			t.Fatalf("%s created at %d, token %d", h.Key(), held[h.Key()], h.Token)
		}
	}
	if resp, err := cli.Get(ctx, entry); err != nil || string(resp.Kvs[0].Value) != runningOn(a.h.Slot) {
		t.Fatalf("a's entry: %v %v", resp, err)
	}

	// Releases together: each owner-checked on its own (rule 4). c1's slot
	// was taken over meanwhile, so its release alone fails.
	if _, err := cli.Delete(ctx, c1.h.Key()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, c1.h.Key(), `{"run_id":"other"}`); err != nil {
		t.Fatal(err)
	}
	close(kv.gate) // from here every commit goes at once
	errs := make([]error, 3)
	for i, h := range []*Held{firstHeld, a.h, c1.h} {
		wg.Go(func() {
			errs[i] = sem.Release(ctx, h, clientv3.OpPut(testLayout.Record(h.Job, h.Value.RunID), "done"))
		})
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], ErrNotOwner) {
		t.Fatalf("releases: %v", errs)
	}
	after := keysUnder(t, cli, testPrefix)
	for _, rec := range []string{testLayout.Record("first", "first@1"), testLayout.Record("a", "a@1")} {
		if _, ok := after[rec]; !ok {
			t.Errorf("no record %s", rec)
		}
	}
	if _, ok := after[testLayout.Record("c", "c@1")]; ok {
		t.Error("a release that lost its slot wrote its record")
	}
	if after[c1.h.Key()] == 0 {
		t.Error("a release that lost its slot deleted the new holder's key")
	}
}
