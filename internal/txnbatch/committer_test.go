package txnbatch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

type outcome struct {
	resp *clientv3.TxnResponse
	err  error
}

// submit commits t in a goroutine of its own; the test reads the outcome.
func submit(ctx context.Context, c *Committer, t Txn) <-chan outcome {
	out := make(chan outcome, 1)
	go func() {
		resp, err := c.Commit(ctx, t)
		out <- outcome{resp, err}
	}()
	return out
}

func await(t *testing.T, ch <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(30 * time.Second):
		t.Fatal("no outcome")
		return outcome{}
	}
}

// awaitSucceeded waits for each outcome of outs and fails unless it has no
// error and its Succeeded is want's of the same index.
func awaitSucceeded(t *testing.T, outs []<-chan outcome, want ...bool) {
	t.Helper()
	for i, out := range outs {
		o := await(t, out)
		if o.err != nil || o.resp.Succeeded != want[i] {
			t.Fatalf("member %d: %v, succeeded %v, want %v", i, o.err, o.resp != nil && o.resp.Succeeded, want[i])
		}
	}
}

// newCommitter makes a committer with one commit in flight at most unless
// opts says otherwise: what comes meanwhile queues, which the tests hold
// and look at.
func newCommitter(t *testing.T, kv *recordingKV, opts Options) *Committer {
	t.Helper()
	if opts.InFlight == 0 {
		opts.InFlight = 1
	}
	c, err := NewOn(kv, kv.cli, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// createIfAbsent puts key=value if key does not exist.
func createIfAbsent(key, value string) Txn {
	return Txn{
		If:   []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
		Then: []clientv3.Op{clientv3.OpPut(key, value)},
	}
}

// queueBehind holds the commits, sends a first transaction and waits for it
// to be in flight, then queues ts behind it: they go together once the
// first commit returns. It returns the first's outcome and theirs.
func queueBehind(t *testing.T, c *Committer, kv *recordingKV, ts ...Txn) (<-chan outcome, []<-chan outcome) {
	t.Helper()
	kv.holdCommits()
	first := submit(t.Context(), c, createIfAbsent("/first", "x"))
	if s := nextCommit(t, kv); !s.plain {
		t.Fatalf("a lone transaction went as %+v", s)
	}
	outs := make([]<-chan outcome, len(ts))
	for i, tx := range ts {
		outs[i] = submit(t.Context(), c, tx)
		waitQueued(t, c, i+1) // in this order
	}
	kv.releaseAll()
	return first, outs
}

// A lone transaction is sent at once, as the plain transaction it is: the
// committer has no window, and nothing but a commit in flight makes a
// transaction wait.
func TestLoneTransactionIsSentAtOnce(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	kv := newRecordingKV(cli)
	c := newCommitter(t, kv, Options{})
	for i := range 3 {
		resp, err := c.Commit(t.Context(), createIfAbsent(fmt.Sprintf("/lone/%d", i), "v"))
		if err != nil || !resp.Succeeded {
			t.Fatalf("commit %d: %v, %+v", i, err, resp)
		}
	}
	if got := kv.shapes(); len(got) != 3 || !got[0].plain || !got[1].plain || !got[2].plain {
		t.Fatalf("commits %+v, want three plain ones", got)
	}
	for range 3 {
		nextCommit(t, kv)
	}
	// The commit is under way while the caller still waits: held here, it
	// started without anything else happening.
	kv.holdCommits()
	out := submit(t.Context(), c, createIfAbsent("/lone/held", "v"))
	if s := nextCommit(t, kv); !s.plain {
		t.Fatalf("held commit %+v", s)
	}
	kv.releaseAll()
	if o := await(t, out); o.err != nil || !o.resp.Succeeded {
		t.Fatalf("held commit: %v", o.err)
	}
}

// What queues behind a commit in flight goes in the next commit, together,
// each with its own outcome: a member whose compare fails does not fail
// its neighbours. A flat merged transaction (all or nothing) fails this.
func TestNeighboursAreIndependent(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client()
	if _, err := cli.Put(t.Context(), "/taken", "someone"); err != nil {
		t.Fatal(err)
	}
	kv := newRecordingKV(cli)
	c := newCommitter(t, kv, Options{})
	first, outs := queueBehind(t, c, kv,
		createIfAbsent("/a", "A"),
		createIfAbsent("/taken", "B"), // fails: the key exists
		createIfAbsent("/c", "C"),
	)
	if o := await(t, first); o.err != nil || !o.resp.Succeeded {
		t.Fatalf("first: %v", o.err)
	}
	a, b, cc := await(t, outs[0]), await(t, outs[1]), await(t, outs[2])
	// The three went in one commit: their independence is the batch's.
	if got := len(kv.shapes()); got != 2 {
		t.Fatalf("%d commits %+v, want the first and one for the three", got, kv.shapes())
	}
	for name, o := range map[string]outcome{"a": a, "b": b, "c": cc} {
		if o.err != nil {
			t.Fatalf("%s: %v", name, o.err)
		}
	}
	if !a.resp.Succeeded || b.resp.Succeeded || !cc.resp.Succeeded {
		t.Fatalf("succeeded a=%v b=%v c=%v, want true false true", a.resp.Succeeded, b.resp.Succeeded, cc.resp.Succeeded)
	}
	// One commit, one revision: both writes carry it.
	if a.resp.Header.Revision != cc.resp.Header.Revision {
		t.Fatalf("revisions %d and %d, want one commit's", a.resp.Header.Revision, cc.resp.Header.Revision)
	}
	if etcdtest.Value(t, cli, "/a") != "A" || etcdtest.Value(t, cli, "/taken") != "someone" || etcdtest.Value(t, cli, "/c") != "C" {
		t.Fatal("writes are not each member's own")
	}
	if s := nextCommit(t, kv); s.plain || s.members != 3 {
		t.Fatalf("second commit %+v, want the three nested", s)
	}
}

// Transactions that write a key another writes or compares go in separate
// commits, in the order they came, and each ends exactly as it would alone
// in that order.
func TestConflictingTransactionsSplit(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	kv := newRecordingKV(cli)
	c := newCommitter(t, kv, Options{})
	readsK := Txn{
		If:   []clientv3.Cmp{clientv3.Compare(clientv3.Value("/k"), "=", "A")},
		Then: []clientv3.Op{clientv3.OpPut("/saw-a", "yes")},
	}
	first, outs := queueBehind(t, c, kv,
		createIfAbsent("/k", "A"), // 0: creates /k
		createIfAbsent("/k", "B"), // 1: writes /k too: after 0, so fails
		readsK,                    // 2: compares /k, which 0 and 1 write: after both, so succeeds
		createIfAbsent("/d", "D"), // 3: unrelated: with 0
	)
	await(t, first)
	if shapes := nextMembers(t, kv, 3); fmt.Sprint(shapes) != "[2 1 1]" {
		t.Fatalf("commits of %v members, want [2 1 1]: {0,3}, {1}, {2}", shapes)
	}
	awaitSucceeded(t, outs, true, false, true, true)
	if etcdtest.Value(t, cli, "/k") != "A" || etcdtest.Value(t, cli, "/saw-a") != "yes" {
		t.Fatal("not what the members alone, in order, would have written")
	}
}

// A batch etcd refuses as a whole (here: a member's lease is gone, which
// the server finds only when it applies the batch) is sent again member by
// member: only the member at fault sees the error.
func TestRefusedBatchFallsBackToMembersAlone(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	lease, err := cli.Grant(t.Context(), 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(t.Context(), lease.ID); err != nil {
		t.Fatal(err)
	}
	kv := newRecordingKV(cli)
	c := newCommitter(t, kv, Options{})
	onGoneLease := Txn{Then: []clientv3.Op{clientv3.OpPut("/leased", "x", clientv3.WithLease(lease.ID))}}
	first, outs := queueBehind(t, c, kv, createIfAbsent("/a", "A"), onGoneLease, createIfAbsent("/c", "C"))
	await(t, first)
	if s := nextCommit(t, kv); s.members != 3 {
		t.Fatalf("batch %+v", s)
	}
	a, bad, cc := await(t, outs[0]), await(t, outs[1]), await(t, outs[2])
	if a.err != nil || !a.resp.Succeeded || cc.err != nil || !cc.resp.Succeeded {
		t.Fatalf("neighbours: %v, %v", a.err, cc.err)
	}
	if !errors.Is(bad.err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("member at fault: %v, want lease not found", bad.err)
	}
	if got := len(kv.shapes()); got != 1+1+3 {
		t.Fatalf("%d commits, want the first, the refused batch and three alone", got)
	}
}

// A bound the committer believes wider than the server's is found out by
// the server's refusal; the members then go alone and succeed.
func TestTooManyOperationsFallsBack(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	kv := newRecordingKV(cli)
	c := newCommitter(t, kv, Options{MaxTxnOps: 10_000}) // the server's is 128
	wide := func(prefix string) Txn {
		var then []clientv3.Op
		for i := range 127 { // alone 127 <= 128; two nested: 2 + 127
			then = append(then, clientv3.OpPut(fmt.Sprintf("%s/%d", prefix, i), "v"))
		}
		return Txn{Then: then}
	}
	first, outs := queueBehind(t, c, kv, wide("/w1"), wide("/w2"))
	await(t, first)
	for i, out := range outs {
		if o := await(t, out); o.err != nil || !o.resp.Succeeded {
			t.Fatalf("member %d: %v", i, o.err)
		}
	}
	if got := kv.shapes(); len(got) != 4 || got[1].members != 2 {
		t.Fatalf("commits %+v, want the first, the refused batch of two and two alone", got)
	}
}

// createIfAbsentRequest is createIfAbsent built as etcd's request.
func createIfAbsentRequest(key, value string) Txn {
	return Txn{Request: &pb.TxnRequest{
		Compare: []*pb.Compare{{Key: []byte(key), Target: pb.Compare_CREATE, Result: pb.Compare_EQUAL,
			TargetUnion: &pb.Compare_CreateRevision{}}},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Value: []byte(value)}}}},
	}}
}

// A member built as etcd's request shares a commit with clientv3's by the
// same rules: each keeps its own compares, and one that writes what another
// writes goes in a commit of its own, after it.
func TestRequestMembersBatchBesideClientv3s(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	if _, err := cli.Put(t.Context(), "/taken", "someone"); err != nil {
		t.Fatal(err)
	}
	kv := newRecordingKV(cli)
	c := newCommitter(t, kv, Options{})
	first, outs := queueBehind(t, c, kv,
		createIfAbsentRequest("/a", "A"),     // 0
		createIfAbsent("/b", "B"),            // 1
		createIfAbsentRequest("/taken", "T"), // 2: fails, alone in its compare
		createIfAbsentRequest("/b", "B2"),    // 3: writes /b as 1 does: after it, so fails
	)
	await(t, first)
	if shapes := nextMembers(t, kv, 2); fmt.Sprint(shapes) != "[3 1]" {
		t.Fatalf("commits of %v members, want [3 1]: {0,1,2}, {3}", shapes)
	}
	awaitSucceeded(t, outs, true, true, false, false)
	if etcdtest.Value(t, cli, "/a") != "A" || etcdtest.Value(t, cli, "/b") != "B" || etcdtest.Value(t, cli, "/taken") != "someone" {
		t.Fatal("writes are not each member's own")
	}
}

// A transaction given both as a request and as If and Then is refused, not
// sent: which of the two the caller meant is not the committer's guess.
func TestRequestAndIfThenTogetherAreRefused(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	kv := newRecordingKV(cli)
	c := newCommitter(t, kv, Options{})
	both := createIfAbsentRequest("/both", "R")
	both.Then = []clientv3.Op{clientv3.OpPut("/both", "T")}
	if _, err := c.Commit(t.Context(), both); err == nil {
		t.Fatal("a transaction given twice was committed")
	}
	if got := kv.shapes(); len(got) != 0 || etcdtest.Value(t, cli, "/both") != "" {
		t.Fatalf("commits %+v, /both %q: want nothing sent", got, etcdtest.Value(t, cli, "/both"))
	}
}
