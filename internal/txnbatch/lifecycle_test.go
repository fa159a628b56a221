package txnbatch

import (
	"context"
	"errors"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// A caller whose context ends while its transaction waits gets ErrNotSent
// and the transaction is never sent; one whose context ends after it was
// sent gets the context's error, and etcd decides the outcome.
func TestContextEndingBeforeAndAfterSend(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	kv := newRecordingKV(cli)
	c := newCommitter(t, kv, Options{})
	kv.holdCommits()
	sentCtx, cancelSent := context.WithCancel(t.Context())
	defer cancelSent()
	sent := submit(sentCtx, c, createIfAbsent("/sent", "v"))
	nextCommit(t, kv)
	queuedCtx, cancelQueued := context.WithCancel(t.Context())
	queued := submit(queuedCtx, c, createIfAbsent("/queued", "v"))
	waitQueued(t, c, 1)
	cancelQueued()
	if o := await(t, queued); !errors.Is(o.err, ErrNotSent) || !errors.Is(o.err, context.Canceled) {
		t.Fatalf("queued then cancelled: %v, want not sent", o.err)
	}
	cancelSent()
	if o := await(t, sent); o.err == nil || errors.Is(o.err, ErrNotSent) {
		t.Fatalf("sent then cancelled: %v, want the context's error", o.err)
	}
	kv.releaseAll()
	// The queue is empty: a new transaction is sent alone, and the
	// cancelled one never.
	if resp, err := c.Commit(t.Context(), createIfAbsent("/after", "v")); err != nil || !resp.Succeeded {
		t.Fatalf("after: %v", err)
	}
	if v := etcdtest.Value(t, cli, "/queued"); v != "" {
		t.Fatalf("the cancelled transaction was committed: %q", v)
	}
	for _, s := range kv.shapes() {
		if !s.plain {
			t.Fatalf("commits %+v: the cancelled transaction went in a batch", kv.shapes())
		}
	}
}

// A batch's commit goes on while one of its callers waits, and ends when
// all of them have gone.
func TestBatchOutlivesOneCallerOnly(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	kv := newRecordingKV(cli)
	c := newCommitter(t, kv, Options{})
	kv.holdCommits()
	first := submit(t.Context(), c, createIfAbsent("/first", "x"))
	nextCommit(t, kv)
	goneCtx, cancelGone := context.WithCancel(t.Context())
	gone := submit(goneCtx, c, createIfAbsent("/gone", "v"))
	waitQueued(t, c, 1)
	stays := submit(t.Context(), c, createIfAbsent("/stays", "v"))
	waitQueued(t, c, 2)
	kv.mu.Lock()
	hold := kv.hold
	kv.mu.Unlock()
	hold <- struct{}{} // the first commit returns; the batch of two starts and is held
	await(t, first)
	if s := nextCommit(t, kv); s.members != 2 {
		t.Fatalf("batch %+v", s)
	}
	cancelGone()
	if o := await(t, gone); o.err == nil || errors.Is(o.err, ErrNotSent) {
		t.Fatalf("gone: %v, want the context's error", o.err)
	}
	kv.releaseAll()
	if o := await(t, stays); o.err != nil || !o.resp.Succeeded {
		t.Fatalf("stays: %v", o.err)
	}
	// The caller that left could not know; etcd applied it.
	if etcdtest.Value(t, cli, "/gone") != "v" {
		t.Fatal("the batch did not apply the member whose caller left after it was sent")
	}
}

// A batch holds at most MaxMembers, and its cost stays within MaxTxnOps.
func TestBatchBounds(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	kv := newRecordingKV(cli)
	c := newCommitter(t, kv, Options{MaxMembers: 4})
	var ts []Txn
	for i := range 10 {
		ts = append(ts, createIfAbsent(fmt.Sprintf("/m/%d", i), "v"))
	}
	first, outs := queueBehind(t, c, kv, ts...)
	await(t, first)
	if shapes := nextMembers(t, kv, 3); fmt.Sprint(shapes) != "[4 4 2]" {
		t.Fatalf("batches of %v, want [4 4 2]", shapes)
	}
	for _, out := range outs {
		if o := await(t, out); o.err != nil || !o.resp.Succeeded {
			t.Fatal(o.err)
		}
	}

	// 100 puts each cost 100: a batch of K costs K + 100, so 28 fit in
	// etcd's 128, well before the cap of 64 members.
	c2 := newCommitter(t, kv, Options{})
	var wide []Txn
	for i := range 30 {
		var then []clientv3.Op
		for j := range 100 {
			then = append(then, clientv3.OpPut(fmt.Sprintf("/wide/%d/%d", i, j), "v"))
		}
		wide = append(wide, Txn{Then: then})
	}
	first, outs = queueBehind(t, c2, kv, wide...)
	await(t, first)
	if shapes := nextMembers(t, kv, 2); fmt.Sprint(shapes) != "[28 2]" {
		t.Fatalf("batches of %v, want [28 2]", shapes)
	}
	for _, out := range outs {
		if o := await(t, out); o.err != nil || !o.resp.Succeeded {
			t.Fatal(o.err)
		}
	}
}

// Close fails what waits with ErrClosed, cancels the commit in flight and
// returns; later commits fail at once.
func TestClose(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	kv := newRecordingKV(cli)
	c, err := NewOn(kv, kv.cli, Options{InFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	kv.holdCommits()
	inFlight := submit(t.Context(), c, createIfAbsent("/in-flight", "v"))
	nextCommit(t, kv)
	waiting := submit(t.Context(), c, createIfAbsent("/waiting", "v"))
	waitQueued(t, c, 1)
	c.Close()
	if o := await(t, waiting); !errors.Is(o.err, ErrClosed) || !errors.Is(o.err, ErrNotSent) {
		t.Fatalf("waiting: %v, want closed", o.err)
	}
	if o := await(t, inFlight); o.err == nil {
		t.Fatal("the commit in flight was not cancelled")
	}
	if _, err := c.Commit(t.Context(), createIfAbsent("/late", "v")); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrNotSent) {
		t.Fatalf("after close: %v", err)
	}
}

// With InFlight commits allowed, a transaction waits only when that many
// are in flight.
func TestInFlightCommitsBeforeQueueing(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	kv := newRecordingKV(cli)
	c := newCommitter(t, kv, Options{InFlight: 2})
	kv.holdCommits()
	a := submit(t.Context(), c, createIfAbsent("/a", "v"))
	nextCommit(t, kv)
	b := submit(t.Context(), c, createIfAbsent("/b", "v"))
	if s := nextCommit(t, kv); !s.plain {
		t.Fatalf("the second transaction went as %+v, want at once and alone", s)
	}
	cc := submit(t.Context(), c, createIfAbsent("/c", "v"))
	waitQueued(t, c, 1)
	kv.releaseAll()
	for _, out := range []<-chan outcome{a, b, cc} {
		if o := await(t, out); o.err != nil || !o.resp.Succeeded {
			t.Fatal(o.err)
		}
	}
	if got := len(kv.shapes()); got != 3 {
		t.Fatalf("%d commits, want 3", got)
	}
}
