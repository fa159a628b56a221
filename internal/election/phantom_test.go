package election

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// A candidate whose lease is gone while it waits in Campaign is told by
// etcd's Campaign that it won, as soon as the keys before it are deleted:
// Campaign never looks at its own key. The elector must not lead on that
// word; it leads only with a later session whose key is really the oldest.
//
// The lease is revoked behind the session's back and the session's clock
// does not move, so it sends no keepalive and still believes in the lease
// when Campaign returns: that is what a process pause or a slow keepalive
// looks like, and only the confirmation read stands between it and a
// phantom leader. (With a real clock a keepalive could fall between the
// revoke and Campaign's return, end the session first and skip the
// confirmation: CI saw it under load.) Once the confirmation has refused
// the win, the clock passes the TTL and the session lapses.
func TestCampaignWonWithLostLeaseIsNotLeadership(t *testing.T) {
	cluster := etcdtest.Start(t)
	witness := cluster.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()

	holderSession, err := concurrency.NewSession(witness, concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holderSession.Close() }()
	holder := concurrency.NewElection(holderSession, strings.TrimSuffix(electionPrefix(testPrefix), "/"))
	if err := holder.Campaign(ctx, `{"id":"holder"}`); err != nil {
		t.Fatal(err)
	}

	ts := newTerms(t)
	ts.check = func(ctx context.Context, l Leadership) error {
		resp, err := witness.Get(ctx, l.Key)
		if err != nil {
			return err
		}
		if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != l.Rev {
			return fmt.Errorf("phantom leader: lead called for %s@%d, which etcd does not have", l.Key, l.Rev)
		}
		return nil
	}
	logs := &recorder{}
	held := clockwork.NewFakeClock()
	b := startReplica(t, cluster.Endpoints(), "b", ts.lead("b"),
		replicaOpts{ttl: 10 * time.Second, margin: time.Second, logger: slog.New(logs), sessionClock: held})
	s, err := b.sessions.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	doomed := s.Lease()
	poll.For(t, 20*time.Second, "two election keys", func() bool { return len(electionKeys(t, witness)) == 2 })
	if keys := electionKeys(t, witness); keys[1] != fmt.Sprintf("%s%x", electionPrefix(testPrefix), doomed) {
		t.Fatalf("queued key %s is not b's lease %x", keys[1], doomed)
	}

	if _, err := witness.Revoke(ctx, doomed); err != nil {
		t.Fatal(err)
	}
	resigned := time.Now()
	if err := holder.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, "the confirmation to refuse b's win", func() bool {
		return logs.has("campaign returned, but our key is not the leader's") || len(ts.starts) > 0
	})
	select {
	case s := <-ts.starts:
		t.Fatalf("phantom leader: lead called with lease %x (key %s) before the session lapsed", s.l.Lease, s.l.Key)
	default:
	}
	held.Advance(10 * time.Second) // past the TTL: the session lapses, the next one campaigns
	next := ts.nextStart(30 * time.Second)
	if next.l.Lease == doomed {
		t.Fatalf("phantom leader: lead called with the revoked lease %x (key %s)", doomed, next.l.Key)
	}
	t.Logf("b led %s after the holder resigned, with new lease %x", next.at.Sub(resigned), next.l.Lease)
}

// recorder is a slog.Handler that keeps the messages.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *recorder) WithGroup(string) slog.Handler            { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Message)
	return nil
}

func (r *recorder) has(msg string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.msgs {
		if m == msg {
			return true
		}
	}
	return false
}

func (r *recorder) count(msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if m == msg {
			n++
		}
	}
	return n
}
