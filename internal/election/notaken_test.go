package election

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// The observer's first read, made before a campaign, can land after Leader
// has read etcd directly (the watch not open yet) and named the winner. The
// late read must not take that answer back: a replica that said "a leads"
// then "nobody leads" with nothing changed in between is what CI once saw
// (internal/replica's TestNoStaleAnswersWithoutEtcd, HTTP 503 no_leader
// right after the replica had seen a leader).
func TestALateFirstReadDoesNotTakeBackALeader(t *testing.T) {
	cluster := etcdtest.Start(t)
	idle := startIdle(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before, key, rev, err := readLeader(ctx, idle.client, electionPrefix(testPrefix), idle.log)
	if err != nil || before != nil {
		t.Fatalf("first read: %v, %v; want no leader", before, err)
	}

	s, err := concurrency.NewSession(cluster.Client(), concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	el := concurrency.NewElection(s, strings.TrimSuffix(electionPrefix(testPrefix), "/"))
	if err := el.Campaign(ctx, `{"id":"a"}`); err != nil {
		t.Fatal(err)
	}
	if l, err := idle.Leader(ctx); err != nil || l.ID != "a" {
		t.Fatalf("Leader after the campaign: %+v, %v; want a", l, err)
	}

	idle.observer.publish(before, key, rev, true) // the watch's read, late
	if l, err := idle.Leader(ctx); err != nil || l.ID != "a" {
		t.Fatalf("Leader after a late read from before the campaign: %+v, %v; want a", l, err)
	}
}
