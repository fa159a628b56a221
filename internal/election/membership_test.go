package election

import (
	"context"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

type runningMembership struct {
	*Membership
	stop func()
}

func startMembership(t *testing.T, r *replica, hash string) *runningMembership {
	t.Helper()
	m, err := NewMembership(r.client, r.sessions, testPrefix, Member{ID: r.id, APIAddr: r.id + ":8080", Version: "v1", ConfigHash: hash}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := m.Run(ctx); err != nil {
			t.Errorf("%s: membership: %v", r.id, err)
		}
	}()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop) // before the replica's session is revoked
	return &runningMembership{Membership: m, stop: stop}
}

func TestMembersAreListedWithTheLeader(t *testing.T) {
	cluster := etcdtest.Start(t)
	ts := newTerms(t)
	r0, r1 := ts.leaderAndStandby(cluster, "r0", "r1")
	m0 := startMembership(t, r0, "h1")
	m1 := startMembership(t, r1, "h1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	list := func() []Member {
		members, err := m0.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return members
	}
	poll.For(t, 20*time.Second, "two members", func() bool { return len(list()) == 2 })
	got := list()
	if got[0].ID != "r0" || !got[0].IsLeader || got[1].ID != "r1" || got[1].IsLeader {
		t.Fatalf("members = %+v, want r0 (leader) and r1", got)
	}
	if got[1].APIAddr != "r1:8080" || got[1].Version != "v1" || got[1].ConfigHash != "h1" || got[1].StartedAt.IsZero() {
		t.Errorf("r1 = %+v", got[1])
	}

	m1.SetConfigHash("h2")
	poll.For(t, 20*time.Second, "r1 to publish config hash h2", func() bool { return list()[1].ConfigHash == "h2" })

	// A lost session takes the member key with it; the next one puts it back.
	s, err := r1.sessions.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lost := s.Lease()
	if _, err := cluster.Client().Revoke(ctx, lost); err != nil {
		t.Fatal(err)
	}
	key := membersPrefix(testPrefix) + "r1"
	poll.For(t, 20*time.Second, "the member key back", func() bool {
		resp, err := cluster.Client().Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.Kvs) == 1 && resp.Kvs[0].Lease != int64(lost)
	})
	if got := list(); len(got) != 2 || got[1].ConfigHash != "h2" {
		t.Errorf("after a new session: %+v", got)
	}

	// The key goes with the session's revoke, not with the membership.
	m1.stop()
	if s, err = r1.sessions.Current(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Client().Revoke(ctx, s.Lease()); err != nil {
		t.Fatal(err)
	}
	if got := list(); len(got) != 1 || got[0].ID != "r0" {
		t.Errorf("after r1 left: %+v", got)
	}
}

// The member key leaves a lease only once the lease is gone: a session
// that ended without its revoke (keepalives lost) leaves its lease, and
// the slots on it, alive until it expires, and the next session registers
// only then. Moved at once, the key would tell the leader the incarnation
// is dead while its slots live, and a run's release could then write its
// record over the leader's lost one (docs/protocol.md#keys, "Members").
func TestTheMemberKeyLeavesALeaseOnlyOnceItIsGone(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client()
	ts := newTerms(t)
	r := startReplica(t, cluster.Endpoints(), "r", ts.lead("r"))
	startMembership(t, r, "h1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := membersPrefix(testPrefix) + "r"
	onLease := func() int64 {
		resp, err := cli.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return 0
		}
		return resp.Kvs[0].Lease
	}
	s, err := r.sessions.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := int64(s.Lease())
	poll.For(t, 20*time.Second, "the member key on the session's lease", func() bool { return onLease() == old })
	s.Orphan() // ended here, alive in etcd for up to its TTL
	next, err := r.sessions.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	poll.For(t, 20*time.Second, "the earlier lease gone", func() bool {
		ttl, err := cli.TimeToLive(ctx, s.Lease())
		if err != nil {
			t.Fatal(err)
		}
		if ttl.TTL > 0 {
			if got := onLease(); got != old {
				t.Fatalf("the member key is on lease %x while the earlier lease %x lives %ds more; want it kept there", got, old, ttl.TTL)
			}
		}
		return ttl.TTL <= 0
	})
	poll.For(t, 20*time.Second, "the member key on the next session's lease", func() bool { return onLease() == int64(next.Lease()) })
}

func TestSettingsAreChecked(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client()
	ts := newTerms(t)
	r := startReplica(t, cluster.Endpoints(), "ok", ts.lead("ok"))
	ts.nextStart(20 * time.Second) // Run is active
	for _, cfg := range []Config{
		{Prefix: "", ID: "a"},
		{Prefix: "/scheduler", ID: "a"},
		{Prefix: "/scheduler/", ID: ""},
		{Prefix: "/scheduler/", ID: "a/b"},
	} {
		if _, err := New(cli, r.sessions, cfg, nil); err == nil {
			t.Errorf("New accepted %+v", cfg)
		}
		if _, err := NewMembership(cli, r.sessions, cfg.Prefix, Member{ID: cfg.ID}, nil); err == nil {
			t.Errorf("NewMembership accepted %+v", cfg)
		}
	}
	// Bounded: if the first Run were not active, this one would campaign
	// and must not hang the test.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.elector.Run(ctx, func(ctx context.Context, _ Leadership) { <-ctx.Done() }); err != ErrRunning {
		t.Errorf("second Run: %v, want %v", err, ErrRunning)
	}
}
