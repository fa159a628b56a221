package watch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

const testPrefix = "/w/"

// cutSetup is a member, a client that reaches it through a proxy the test
// can cut, and a witness client that always reaches it directly.
func cutSetup(t *testing.T) (ctx context.Context, cut, restore func(), client, witness *clientv3.Client) {
	t.Helper()
	cluster := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, cluster.Endpoints()[0])
	client = etcdtest.NewClient(t, []string{proxy.Endpoint()})
	witness = cluster.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx, proxy.Cut, proxy.Restore, client, witness
}

// The watch is cut, the prefix changes and the history is compacted past
// where the watch stood: the resumed watch is refused, and the handler must
// get a fresh read of the current state, then the changes after it, each
// once (docs/design.md#the-safety-rules, rule 8).
func TestCompactionWhileDisconnectedRereads(t *testing.T) {
	ctx, cut, restore, client, witness := cutSetup(t)
	put(t, ctx, witness, "a", "1")
	last := put(t, ctx, witness, "b", "1")
	h := newCopy(client, testPrefix)
	runWatch(t, Watch{Client: client, Prefixes: []string{testPrefix}}, h)
	waitCaughtUp(t, h, witness, last, "the first read")

	cut()
	put(t, ctx, witness, "c", "1")
	del(t, ctx, witness, "a")
	put(t, ctx, witness, "b", "2")
	compactedAt := put(t, ctx, witness, "/elsewhere", "x") // outside the prefix
	if _, err := witness.Compact(ctx, compactedAt); err != nil {
		t.Fatal(err)
	}
	restore()
	after := put(t, ctx, witness, "d", "1")

	got := waitCaughtUp(t, h, witness, after, "the copy after the compaction")
	if len(got.reads) < 2 || got.reads[len(got.reads)-1] < compactedAt {
		t.Fatalf("reads at revisions %v: want a re-read at or after the compaction at %d", got.reads, compactedAt)
	}
	if !slices.Contains(got.pauses, true) {
		t.Fatalf("Paused calls (reread) %v: the handler was not told its state would be read afresh", got.pauses)
	}
	// Everything applied after the re-read is newer than it; the copy
	// checked each event against the revision it stood at.
	if len(got.wrong) > 0 {
		t.Fatalf("events applied twice or out of order: %v", got.wrong)
	}
}

// The client's connection is cut while the prefix changes: every change
// reaches the handler exactly once and in revision order, without a
// re-read, since nothing was compacted.
func TestDisconnectDeliversEveryChangeOnce(t *testing.T) {
	ctx, cut, restore, client, witness := cutSetup(t)
	h := newCopy(client, testPrefix)
	runWatch(t, Watch{Client: client, Prefixes: []string{testPrefix}, ProgressNotify: true}, h)
	poll.For(t, 20*time.Second, "the first read", func() bool { return len(h.snapshot().reads) > 0 })
	var written []int64
	written = append(written, put(t, ctx, witness, "k0", "v"))
	waitCaughtUp(t, h, witness, written[0], "the first change")

	cut()
	for i := 1; i <= 5; i++ {
		written = append(written, put(t, ctx, witness, fmt.Sprintf("k%d", i), "v"))
	}
	written = append(written, del(t, ctx, witness, "k2"))
	restore()
	written = append(written, put(t, ctx, witness, "k6", "v"))

	got := waitCaughtUp(t, h, witness, written[len(written)-1], "every change")
	if !slices.Equal(got.applied, written) {
		t.Fatalf("applied revisions %v, want %v: each change once, in order", got.applied, written)
	}
	if len(got.reads) != 1 {
		t.Fatalf("reads at %v: a watch that lost no history should resume, not re-read", got.reads)
	}
	if len(got.wrong) > 0 {
		t.Fatal(got.wrong)
	}
}

// Run returns promptly when its ctx is cancelled: while following, and
// while it cannot reach etcd and waits to retry. Its goroutines end with it
// (TestMain checks for leaks).
func TestRunReturnsOnCancel(t *testing.T) {
	ctx, cut, _, client, witness := cutSetup(t)
	h := newCopy(client, testPrefix)
	w := Watch{Client: client, Prefixes: []string{testPrefix}, ProgressNotify: true}

	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx, h) }()
	waitCaughtUp(t, h, witness, put(t, ctx, witness, "k", "v"), "the watch to follow")
	stop()
	if err := waitReturn(t, done); err != nil {
		t.Fatalf("Run after cancel: %v, want nil", err)
	}

	// Unreachable: the read fails and is retried until cancelled.
	cut()
	unreachable := newCopy(client, testPrefix)
	rctx, stop = context.WithCancel(ctx)
	go func() { done <- w.Run(rctx, unreachable) }()
	stop()
	if err := waitReturn(t, done); err != nil {
		t.Fatalf("Run after cancel, etcd unreachable: %v, want nil", err)
	}

	// Follow reports the cancel as ctx's error.
	fctx, stop := context.WithCancel(ctx)
	stop()
	if err := w.Follow(fctx, h, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow after cancel: %v, want %v", err, context.Canceled)
	}
}

func waitReturn(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of its ctx being cancelled")
		return nil
	}
}

// waitCaughtUp waits until the copy has reached rev and equals the prefix
// as the witness reads it.
func waitCaughtUp(t *testing.T, h *copyHandler, witness *clientv3.Client, rev int64, what string) snapshot {
	t.Helper()
	var got snapshot
	poll.Until(t, 20*time.Second, what, func() (bool, string) {
		got = h.snapshot()
		if got.rev < rev {
			return false, fmt.Sprintf("copy at revision %d, want %d", got.rev, rev)
		}
		return true, ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := witness.Get(ctx, testPrefix, clientv3.WithPrefix(), clientv3.WithRev(got.rev))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, kv := range resp.Kvs {
		want[string(kv.Key)] = string(kv.Value)
	}
	if !maps.Equal(got.state, want) {
		t.Fatalf("%s: copy at revision %d is %v, etcd has %v", what, got.rev, got.state, want)
	}
	return got
}

func put(t *testing.T, ctx context.Context, cli *clientv3.Client, key, value string) int64 {
	t.Helper()
	if key[0] != '/' {
		key = testPrefix + key
	}
	resp, err := cli.Put(ctx, key, value)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

func del(t *testing.T, ctx context.Context, cli *clientv3.Client, key string) int64 {
	t.Helper()
	resp, err := cli.Delete(ctx, testPrefix+key)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}
