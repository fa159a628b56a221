package election

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/session"
)

// Leader answers ErrNoLeader while nobody leads and the winner's record
// afterwards, whether Run is watching or not.
func TestLeaderReportsTheWinner(t *testing.T) {
	cluster := etcdtest.Start(t)
	ts := newTerms(t)
	idle := startIdle(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := idle.Leader(ctx); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("Leader before any campaign: %v, want %v", err, ErrNoLeader)
	}

	a := startReplica(t, cluster.Endpoints(), "a", ts.lead("a"))
	won := ts.nextStart(20 * time.Second)
	for _, e := range []*Elector{a.elector, idle} {
		var got Leader
		poll.For(t, 20*time.Second, "the observer to name a leader", func() bool {
			var err error
			got, err = e.Leader(ctx)
			return err == nil
		})
		if got.ID != "a" || got.APIAddr != "a:8080" || got.Revision != won.l.Rev || got.Since.IsZero() {
			t.Errorf("%s: Leader = %+v, want a, a:8080, revision %d", e.cfg.ID, got, won.l.Rev)
		}
	}
	if l, err := a.elector.Leadership(); err != nil || l != won.l {
		t.Errorf("Leadership = %+v, %v; want %+v", l, err, won.l)
	}
	if _, err := idle.Leadership(); !errors.Is(err, ErrNotLeader) {
		t.Errorf("idle Leadership: %v, want %v", err, ErrNotLeader)
	}

	a.stopElector()
	<-a.electorDone
	if _, err := idle.Leader(ctx); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("Leader after the only leader resigned: %v, want %v", err, ErrNoLeader)
	}
}

// startIdle makes an elector that is never Run, so Leader reads etcd.
func startIdle(t *testing.T, cluster *etcdtest.Cluster) *Elector {
	t.Helper()
	cli := cluster.Client()
	sessions, err := session.NewManager(cli, session.Options{TTL: testTTL, Margin: testMargin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(cli, sessions, Config{Prefix: testPrefix, ID: "idle"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The observer's watch is cut, the leader changes and the history is
// compacted while it is away: the resumed watch is refused (compacted) and
// closes. The observer must read the leader again rather than keep the old
// one (docs/design.md#the-safety-rules, rule 8).
func TestObserverRereadsAfterCompaction(t *testing.T) {
	cluster := etcdtest.Start(t)
	proxy := newCutProxy(t, cluster.Endpoints()[0])
	cli := etcdtest.NewClient(t, []string{proxy.endpoint()})
	witness := cluster.Client()
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := &recorder{}
	o := newObserver(cli, electionPrefix(testPrefix), clockwork.NewRealClock(), slog.New(logs), m)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	octx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); o.run(octx) }()
	defer func() { stop(); <-done }()

	pfx := strings.TrimSuffix(electionPrefix(testPrefix), "/")
	campaign := func(id string) *concurrency.Election {
		s, err := concurrency.NewSession(witness, concurrency.WithTTL(10))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		e := concurrency.NewElection(s, pfx)
		if err := e.Campaign(ctx, `{"id":"`+id+`"}`); err != nil {
			t.Fatal(err)
		}
		return e
	}
	observed := func(id string, rev int64) func() bool {
		return func() bool {
			l, synced := o.current()
			return synced && l != nil && l.ID == id && l.Revision == rev
		}
	}

	first := campaign("first")
	poll.For(t, 20*time.Second, "the first leader observed", observed("first", first.Rev()))

	proxy.cut()
	if err := first.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	second := campaign("second")
	resp, err := witness.Put(ctx, testPrefix+"unrelated", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := witness.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	proxy.restore()

	poll.For(t, 30*time.Second, "the second leader observed", observed("second", second.Rev()))
	if !logs.has("election watch closed; re-reading the leader") {
		t.Error("the watch never closed; the test did not exercise re-reading")
	}
	if got := testutil.ToFloat64(m.changes); got != 2 {
		t.Errorf("leader_changes_total = %v, want 2", got)
	}
}
