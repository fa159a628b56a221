package slots

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/session"
)

// A holder cut off from etcd loses its slots within the TTL (plus a second
// for the server's expiry loop); another replica then claims them, and the
// old holder's late release, once it can talk again, neither deletes the new
// holder's keys nor writes its run record (docs/design.md#the-safety-rules, rule 4).
func TestExpiredHolderLosesSlotsAndCannotReleaseLate(t *testing.T) {
	cluster := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, cluster.Endpoints()[0])
	aCli := etcdtest.NewClient(t, []string{proxy.Endpoint()})
	bCli := cluster.Client()
	observer := cluster.Client()
	semA, semB := startSemaphore(t, aCli), startSemaphore(t, bCli)
	sessA := newSession(t, aCli, 2*time.Second, 500*time.Millisecond)
	sessB := newSession(t, bCli, 2*time.Second, 500*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	req := func(run, holder string) Request {
		return Request{Job: "solo", MaxConcurrency: 1, Resources: []Resource{{"db", 1}}, Value: Value{RunID: run, Holder: holder}}
	}
	hA, err := semA.Claim(ctx, sessA, req("solo@1", "a"))
	if err != nil {
		t.Fatal(err)
	}
	watch := observer.Watch(ctx, hA.Key(), clientv3.WithRev(hA.Token+1))

	proxy.Pause()
	pausedAt := time.Now()
	deletedAt := etcdtest.DeletedAt(t, ctx, watch, "the server never expired the cut-off holder's slot")
	if took, limit := deletedAt.Sub(pausedAt), sessA.TTL()+time.Second; took > limit {
		t.Fatalf("slot deleted %s after the holder was cut off, limit %s", took, limit)
	}
	t.Logf("slot deleted %s after the holder was cut off (ttl %s)", deletedAt.Sub(pausedAt), sessA.TTL())
	select {
	case <-hA.Context().Done():
	default:
		t.Fatal("the server deleted the slot while its holder's context was still live")
	}

	hB, err := claimWait(ctx, semB, sessB, req("solo@2", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if hB.Token <= hA.Token {
		t.Fatalf("new holder's token %d is not above the old one's %d", hB.Token, hA.Token)
	}

	proxy.Resume()
	record := testLayout.Record("solo", "solo@1")
	if err := semA.Release(ctx, hA, clientv3.OpPut(record, "succeeded")); !errors.Is(err, ErrNotOwner) {
		t.Errorf("late release: err = %v, want %v", err, ErrNotOwner)
	}
	keys := keysUnder(t, observer, testPrefix)
	for _, k := range []string{hB.Key(), testLayout.ResourceSlot("db", 0)} {
		if keys[k] != hB.Token {
			t.Errorf("after the late release %s has create revision %d, want the new holder's %d", k, keys[k], hB.Token)
		}
	}
	if _, written := keys[record]; written {
		t.Error("the late release wrote its run record")
	}
	if err := semB.Release(ctx, hB); err != nil {
		t.Fatal(err)
	}
}

// With keepalives cut off, the holder's context ends strictly before the
// server deletes the slot, with time to spare for stopping the run (docs/design.md#the-safety-rules,
// rule 5). Responses are delayed first, so only a guard that counts from
// the send time of acknowledged keepalives (not their arrival) passes.
func TestHolderContextEndsBeforeServerDeletesSlot(t *testing.T) {
	const ttl, margin = 5 * time.Second, time.Second
	cluster := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, cluster.Endpoints()[0])
	cli := etcdtest.NewClient(t, []string{proxy.Endpoint()})
	observer := cluster.Client()
	sem := startSemaphore(t, cli)
	sess := newSession(t, cli, ttl, margin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	h, err := sem.Claim(ctx, sess, Request{Job: "j", MaxConcurrency: 1, Value: Value{RunID: "j@1"}})
	if err != nil {
		t.Fatal(err)
	}
	watch := observer.Watch(ctx, h.Key(), clientv3.WithRev(h.Token+1))
	proxy.SetDelay(0, 1500*time.Millisecond)
	// Wait until a keepalive sent after the delay began is acknowledged, so
	// the deadline comes from a slow round trip.
	delayed := time.Now()
	poll.For(t, 20*time.Second, "a keepalive acknowledged on the slow link", func() bool { return sess.Deadline().After(delayed.Add(ttl - margin)) })

	proxy.Pause()
	var cancelledAt time.Time
	select {
	case <-h.Context().Done():
		cancelledAt = time.Now()
	case <-ctx.Done():
		t.Fatal("holder context not cancelled with keepalives blocked")
	}
	// The session ended it: its guard, or the client library's session
	// first (see internal/session's TestGuardEndsSessionBeforeServerExpiresLease).
	// Not the view: a delete it saw would come too late.
	if cause := context.Cause(h.Context()); !errors.Is(cause, session.ErrGuardExpired) && !errors.Is(cause, session.ErrLeaseGone) {
		t.Errorf("cause = %v, want %v or %v", cause, session.ErrGuardExpired, session.ErrLeaseGone)
	}
	deletedAt := etcdtest.DeletedAt(t, ctx, watch, "server never expired the lease")
	if gap := deletedAt.Sub(cancelledAt); gap < margin/2 {
		t.Fatalf("holder context cancelled at %s, only %s before the server deleted the slot at %s",
			cancelledAt.Format(time.StampMicro), gap, deletedAt.Format(time.StampMicro))
	}
	t.Logf("holder context cancelled %s before the server deleted the slot (%v)", deletedAt.Sub(cancelledAt), context.Cause(h.Context()))
	proxy.Resume()
}
