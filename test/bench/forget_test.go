package main

import (
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// A step's keys go a page at a time, every page of them, and nothing
// outside the prefix goes with them.
func TestDeletePagedTakesEveryKeyOfThePrefixAPageATime(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	ctx := t.Context()
	for i := range 25 {
		if _, err := cli.Put(ctx, fmt.Sprintf("%sjob/%03d", layout.Runs(), i), "r"); err != nil {
			t.Fatal(err)
		}
	}
	// Beside the prefix on both sides of its range.
	beside := []string{layout.Prefix + "run", layout.Runs()[:len(layout.Runs())-1] + "0"}
	for _, k := range beside {
		if _, err := cli.Put(ctx, k, "kept"); err != nil {
			t.Fatal(err)
		}
	}
	n, err := deletePaged(ctx, cli, layout.Runs(), 7)
	if err != nil || n != 25 {
		t.Fatalf("deleted %d (%v), want 25", n, err)
	}
	if left, err := cli.Get(ctx, layout.Runs(), clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || left.Count != 0 {
		t.Errorf("%d keys left under %s (%v)", left.Count, layout.Runs(), err)
	}
	for _, k := range beside {
		if resp, err := cli.Get(ctx, k); err != nil || len(resp.Kvs) != 1 {
			t.Errorf("%s beside the prefix went (%v)", k, err)
		}
	}
}

// forget leaves none of a step's records, markers, chunk records or
// cursors behind.
func TestForgetLeavesNoneOfAStepsKeys(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	ctx := t.Context()
	prefixes := []string{layout.Runs(), layout.UnstartedMarks(), layout.Shed(), layout.Jobs()}
	for _, p := range prefixes {
		if _, err := cli.Put(ctx, p+"b1-0001/x", "v"); err != nil {
			t.Fatal(err)
		}
	}
	(&env{cli: cli}).forget(ctx)
	for _, p := range prefixes {
		if left, err := cli.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || left.Count != 0 {
			t.Errorf("%d keys left under %s (%v)", left.Count, p, err)
		}
	}
}
