package session

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

func TestMain(m *testing.M) { etcdtest.VerifyNoLeaks(m) }

// open starts a session on cli with a 5s TTL and a 1s margin, on clock
// (nil: the real one).
func open(t *testing.T, ctx context.Context, cli *clientv3.Client, clock clockwork.Clock) *Session {
	t.Helper()
	s, err := New(ctx, cli, Options{TTL: 5 * time.Second, Margin: time.Second, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openFresh starts an etcd and a session on it (see open), and a 30s
// context for the test's requests.
func openFresh(t *testing.T, clock clockwork.Clock) (*clientv3.Client, context.Context, *Session) {
	t.Helper()
	cli := etcdtest.Start(t).Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return cli, ctx, open(t, ctx, cli, clock)
}

// With keepalives cut off, the session must end strictly before the server
// expires the lease: that ordering is what keeps a run from executing after
// its slot was handed to someone else (docs/design.md#the-safety-rules, rule 5). Responses are delayed
// first, so a guard that counted from when an acknowledgement arrived (as
// etcd's client does) would end the session after the server expired the
// lease; only counting from the send time passes.
func TestGuardEndsSessionBeforeServerExpiresLease(t *testing.T) {
	cluster := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, cluster.Endpoints()[0])
	holderCli := etcdtest.NewClient(t, []string{proxy.Endpoint()})
	observer := cluster.Client()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := open(t, ctx, holderCli, nil)
	defer s.Orphan()
	if _, err := holderCli.Put(ctx, "held", "x", clientv3.WithLease(s.Lease())); err != nil {
		t.Fatal(err)
	}
	watch := observer.Watch(ctx, "held")
	proxy.SetDelay(0, 1500*time.Millisecond)
	// Let keepalives sent after the delay began be acknowledged, so the
	// deadline comes from a slow round trip.
	delayed := time.Now()
	poll.Until(t, 30*time.Second, "a keepalive sent after the delay began acknowledged", func() (bool, string) {
		return s.Deadline().After(delayed.Add(4 * time.Second)), fmt.Sprintf("session err %v, deadline %s, delay began %s",
			s.Err(), s.Deadline().Format(time.StampMilli), delayed.Format(time.StampMilli))
	})

	proxy.Pause()
	var lostAt time.Time
	select {
	case <-s.Done():
		lostAt = time.Now()
	case <-ctx.Done():
		t.Fatal("session did not end with keepalives blocked")
	}
	// The guard's deadline ends it, or the client library's session does
	// first: the library counts a TTL from its own last answer, which can
	// be older than the guard's last acknowledged send (the two keepalive
	// streams do not beat together). Either is an end before the server's.
	if err := s.Err(); !errors.Is(err, ErrGuardExpired) && !errors.Is(err, ErrLeaseGone) {
		t.Errorf("cause = %v, want %v or %v", err, ErrGuardExpired, ErrLeaseGone)
	}
	deadline := s.Deadline()
	deletedAt := etcdtest.DeletedAt(t, ctx, watch, "server never expired the lease")
	// Runs need the margin to stop; ending a hair before the delete is not
	// enough.
	if gap := deletedAt.Sub(lostAt); gap < 500*time.Millisecond {
		t.Fatalf("session ended at %s, only %s before the server deleted the key at %s", lostAt.Format(time.StampMicro), gap, deletedAt.Format(time.StampMicro))
	}
	// Whoever ended it, the guard's own deadline must have been that early
	// too: counted from the arrival of the slow answers it would fall after
	// the delete.
	if gap := deletedAt.Sub(deadline); gap < 500*time.Millisecond {
		t.Fatalf("guard deadline %s, only %s before the server deleted the key at %s", deadline.Format(time.StampMicro), gap, deletedAt.Format(time.StampMicro))
	}
	t.Logf("session ended %s before the server deleted the key (%v)", deletedAt.Sub(lostAt), s.Err())
	proxy.Resume()
}

func TestCloseRevokesLease(t *testing.T) {
	cli, ctx, s := openFresh(t, nil)
	if _, err := cli.Put(ctx, "k", "v", clientv3.WithLease(s.Lease())); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(s.Err(), ErrClosed) {
		t.Errorf("cause = %v, want %v", s.Err(), ErrClosed)
	}
	resp, err := cli.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Fatal("key bound to a revoked lease still exists")
	}
}

func TestRevokedLeaseEndsSession(t *testing.T) {
	cli, ctx, s := openFresh(t, nil)
	defer s.Orphan()
	if _, err := cli.Revoke(ctx, s.Lease()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("session outlived its revoked lease")
	}
	if !errors.Is(s.Err(), ErrLeaseGone) {
		t.Errorf("cause = %v, want %v", s.Err(), ErrLeaseGone)
	}
}

func TestOptionsAreChecked(t *testing.T) {
	for _, o := range []Options{
		{TTL: 500 * time.Millisecond, Margin: 100 * time.Millisecond},
		{TTL: 2 * time.Second, Margin: 2 * time.Second},
		{TTL: 2 * time.Second, Margin: 0},
	} {
		if err := o.check(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// A slow but working link does not end the session: keepalives go out on a
// fixed beat, not one answer after another, so a 2s round trip against a 4s
// guarded window (TTL 5s, margin 1s) keeps the lease trusted. (Sending the
// next keepalive only after the previous answer ended it within seconds.)
func TestSlowRoundTripsKeepTheSession(t *testing.T) {
	cluster := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, cluster.Endpoints()[0])
	cli := etcdtest.NewClient(t, []string{proxy.Endpoint()})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := open(t, ctx, cli, nil)
	defer s.Orphan()
	proxy.SetDelay(0, 2*time.Second)
	slowFrom := time.Now()
	// Fifteen seconds is several guarded windows of slow answers.
	poll.For(t, 30*time.Second, "the session to end or 15s of slow answers", func() bool {
		return s.Err() != nil || time.Since(slowFrom) > 15*time.Second
	})
	if err := s.Err(); err != nil {
		t.Fatalf("session ended %s into 2s round trips: %v", time.Since(slowFrom).Round(time.Millisecond), err)
	}
	if !s.Deadline().After(slowFrom.Add(4 * time.Second)) {
		t.Errorf("deadline %s never moved past the slow period's start", s.Deadline())
	}
}

// Expired says the guard's deadline has passed as soon as the clock is past
// it, before the guard's own timer has ended the session: after a process
// pause both come due at once, and a run about to start asks Expired.
func TestExpiredFollowsTheClockNotTheGuard(t *testing.T) {
	clock := clockwork.NewFakeClock()
	_, _, s := openFresh(t, clock)
	defer func() { _ = s.Close(context.Background()) }()
	if s.Expired() {
		t.Fatal("expired at its start")
	}
	deadline := s.Deadline()
	clock.Advance(deadline.Sub(clock.Now()) - time.Millisecond)
	if s.Expired() {
		t.Fatalf("expired a millisecond before its deadline %s", deadline)
	}
	// Past it: Expired says so whether or not the guard has run, and the
	// session ends (the guard) soon after.
	clock.Advance(2 * time.Second)
	if !s.Expired() && s.Deadline().Before(clock.Now()) {
		t.Fatal("not expired with the clock past the deadline")
	}
}
