package slots

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// A view that fell behind a compaction cannot resume its watch; follow says
// so (Run then reads again) and the fresh read is complete (SPEC rule 8).
func TestViewStartsOverAfterCompaction(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client()
	sem, err := New(cli, testPrefix, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rev, err := sem.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{SlotKey(testPrefix, "j", 0), SlotKey(testPrefix, "j", 1), ResourceKey(testPrefix, "db", 0)} {
		if _, err := cli.Put(ctx, k, `{"run_id":"j@1"}`); err != nil {
			t.Fatal(err)
		}
	}
	del, err := cli.Delete(ctx, SlotKey(testPrefix, "j", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, del.Header.Revision); err != nil {
		t.Fatal(err)
	}
	if err := sem.follow(ctx, rev); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("follow from a compacted revision: err = %v, want %v", err, rpctypes.ErrCompacted)
	}
	if _, err := sem.load(ctx); err != nil {
		t.Fatal(err)
	}
	if sem.InUse("j") != 1 || sem.ResourceInUse("db") != 1 || len(sem.List()) != 2 {
		t.Fatalf("after the re-read: job %d, resource %d, list %v", sem.InUse("j"), sem.ResourceInUse("db"), sem.List())
	}
}

// Claim waits for the view's first read rather than trusting an empty one.
func TestClaimWaitsForTheView(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client()
	sem, err := New(cli, testPrefix, nil, nil)
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
