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

	m1.stop()
	if got := list(); len(got) != 1 || got[0].ID != "r0" {
		t.Errorf("after r1 left: %+v", got)
	}
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
