package election

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// termSetup starts a leader "a" whose client reaches etcd through a proxy
// the test can cut, with a session long enough to outlive the client's
// reconnect backoff, and waits for its first term.
func termSetup(t *testing.T) (ctx context.Context, proxy *cutProxy, witness *etcdtest.Cluster, ts *terms, logs *recorder, first started) {
	t.Helper()
	cluster := etcdtest.Start(t)
	proxy = newCutProxy(t, cluster.Endpoints()[0])
	ts = newTerms(t)
	logs = &recorder{}
	startReplica(t, []string{proxy.endpoint()}, "a", ts.lead("a"),
		replicaOpts{ttl: 10 * time.Second, margin: time.Second, logger: slog.New(logs)})
	first = ts.nextStart(20 * time.Second)
	// The term's follower reads its key first, then watches after that
	// read: a cut before it would leave that read, not the watch, to see
	// what changed.
	poll.For(t, 20*time.Second, "the term's first read of its key", func() bool {
		return logs.count(termHeld) >= 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx, proxy, cluster, ts, logs, first
}

// termHeld is what the term's follower logs (at debug) on each read that
// finds the term's key still held.
const termHeld = "leader key read; the term goes on"

// compact compacts the history past the term watch's position (two writes
// outside the election, compacted at the second), so the watch cannot
// resume from where it stood.
func compact(t *testing.T, ctx context.Context, cluster *etcdtest.Cluster) {
	t.Helper()
	witness := cluster.Client()
	var rev int64
	for range 2 {
		resp, err := witness.Put(ctx, testPrefix+"unrelated", "x")
		if err != nil {
			t.Fatal(err)
		}
		rev = resp.Header.Revision
	}
	if _, err := witness.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
}

// The leader's watch on its own key is cut, and the key is deleted and the
// history compacted while it is away: the resumed watch is refused and
// closes, and the re-read finds the key gone, which ends the term. A watch
// simply re-opened at the current revision would never see that delete.
func TestTermEndsWhenKeyDeletedWhileWatchWasDown(t *testing.T) {
	ctx, proxy, cluster, ts, logs, first := termSetup(t)

	proxy.cut()
	if _, err := cluster.Client().Delete(ctx, first.l.Key); err != nil {
		t.Fatal(err)
	}
	compact(t, ctx, cluster)
	proxy.restore()

	end := ts.nextEnd(20 * time.Second)
	if !errors.Is(end.cause, ErrLeadershipLost) {
		t.Errorf("cause = %v, want %v", end.cause, ErrLeadershipLost)
	}
	if !logs.has("leader key watch closed; re-reading the key") {
		t.Error("the term watch never closed; the test did not exercise re-reading")
	}
}

// The leader's connection is cut and its key deleted while it is away,
// with nothing compacted: the watch resumes where it stood and sees the
// delete, which ends the term.
func TestTermEndsWhenKeyDeletedWhileDisconnected(t *testing.T) {
	ctx, proxy, cluster, ts, _, first := termSetup(t)

	proxy.cut()
	if _, err := cluster.Client().Delete(ctx, first.l.Key); err != nil {
		t.Fatal(err)
	}
	proxy.restore()

	end := ts.nextEnd(20 * time.Second)
	if !errors.Is(end.cause, ErrLeadershipLost) {
		t.Errorf("cause = %v, want %v", end.cause, ErrLeadershipLost)
	}
}

// A compaction while the leader is cut off leaves its key in place: the
// re-read finds the term intact, so it goes on, and the watch opened after
// that read still ends it when the key is deleted later.
func TestTermFollowedAfterCompaction(t *testing.T) {
	ctx, proxy, cluster, ts, logs, first := termSetup(t)

	proxy.cut()
	compact(t, ctx, cluster)
	proxy.restore()
	poll.For(t, 30*time.Second, "the term's key read again after the compaction, and found held", func() bool {
		return logs.has("leader key watch closed; re-reading the key") && logs.count(termHeld) >= 2
	})

	deleted := time.Now()
	if _, err := cluster.Client().Delete(ctx, first.l.Key); err != nil {
		t.Fatal(err)
	}
	end := ts.nextEnd(20 * time.Second)
	if end.cancelled.Before(deleted) {
		t.Fatalf("term ended (%v) before its key was deleted: the re-read after the compaction ended it", end.cause)
	}
	t.Logf("term ended %s after its key was deleted", end.cancelled.Sub(deleted))
	if !errors.Is(end.cause, ErrLeadershipLost) {
		t.Errorf("cause = %v, want %v", end.cause, ErrLeadershipLost)
	}
}
