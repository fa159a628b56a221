package election

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/session"
)

// shifted is the real clock set ahead: a replica whose own observation of
// a leader is an hour off the leader's win.
type shifted struct {
	clockwork.Clock
	by time.Duration
}

func (c shifted) Now() time.Time                  { return c.Clock.Now().Add(c.by) }
func (c shifted) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// storedRecord is the leader's record as etcd holds it.
func storedRecord(t *testing.T, cli *clientv3.Client) record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, electionPrefix(testPrefix), clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("read the leader's record: %v (%d keys)", err, len(resp.Kvs))
	}
	var rec record
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		t.Fatalf("leader record %q: %v", resp.Kvs[0].Value, err)
	}
	return rec
}

// waitSince waits until e reports leader id since want.
func waitSince(t *testing.T, e *Elector, id string, want time.Time) {
	t.Helper()
	poll.Until(t, 20*time.Second, e.cfg.ID+" to report "+id+" since "+want.Format(time.RFC3339Nano), func() (bool, string) {
		l, err := e.Leader(context.Background())
		return err == nil && l.ID == id && l.Since.Equal(want), fmt.Sprintf("%+v, %v", l, err)
	})
}

// GET /api/v1/leader's since is when the leader won, the same from every
// replica: one watching since before the win, one started later with its
// clock an hour ahead, and one that reads etcd without watching.
func TestLeaderSinceIsTheWinEverywhere(t *testing.T) {
	cluster := etcdtest.Start(t)
	ts := newTerms(t)
	before := time.Now()
	a := startReplica(t, cluster.Endpoints(), "a", ts.lead("a"))
	ts.nextStart(20 * time.Second)
	after := time.Now()
	rec := storedRecord(t, cluster.Client())
	if rec.ID != "a" || rec.Since.Before(before) || rec.Since.After(after) {
		t.Fatalf("leader record %+v: want a, since the win, between %s and %s", rec, before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano))
	}

	ahead := shifted{clockwork.NewRealClock(), time.Hour}
	b := startReplica(t, cluster.Endpoints(), "b", ts.lead("b"), replicaOpts{ttl: testTTL, margin: testMargin, clock: ahead})
	sessions, err := session.NewManager(cluster.Client(), session.Options{TTL: testTTL, Margin: testMargin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := New(cluster.Client(), sessions, Config{Prefix: testPrefix, ID: "idle", Clock: ahead}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*Elector{a.elector, b.elector, idle} {
		waitSince(t, e, "a", rec.Since)
	}
}

// A rolling upgrade: a leader of the earlier version writes no since, and
// every replica then reports when it saw it, as before; the record of a
// leader of this version still decodes as the earlier version reads it.
func TestLeaderSinceOfAnEarlierVersion(t *testing.T) {
	cluster := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := concurrency.NewSession(cluster.Client(), concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	old := concurrency.NewElection(s, strings.TrimSuffix(electionPrefix(testPrefix), "/"))
	if err := old.Campaign(ctx, `{"id":"old","api_addr":"old:8080"}`); err != nil {
		t.Fatal(err)
	}

	ts := newTerms(t)
	before := time.Now()
	b := startReplica(t, cluster.Endpoints(), "b", ts.lead("b"), replicaOpts{ttl: testTTL, margin: testMargin, clock: shifted{clockwork.NewRealClock(), time.Hour}})
	poll.Until(t, 20*time.Second, "b to report the old leader since it saw it", func() (bool, string) {
		l, err := b.elector.Leader(ctx)
		return err == nil && l.ID == "old" && !l.Since.Before(before.Add(time.Hour)), fmt.Sprintf("%+v, %v", l, err)
	})

	if err := old.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	ts.nextStart(20 * time.Second)
	rec := storedRecord(t, cluster.Client())
	waitSince(t, b.elector, "b", rec.Since)
	resp, err := cluster.Client().Get(ctx, electionPrefix(testPrefix), clientv3.WithFirstCreate()...)
	if err != nil {
		t.Fatal(err)
	}
	var earlier struct {
		ID      string `json:"id"`
		APIAddr string `json:"api_addr"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &earlier); err != nil || earlier.ID != "b" || earlier.APIAddr != "b:8080" {
		t.Errorf("the earlier version reads %q as %+v, %v", resp.Kvs[0].Value, earlier, err)
	}
}
