package session

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

func TestManagerReplacesLostSession(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client()
	reg := prometheus.NewRegistry()
	m, err := NewManager(cli, Options{TTL: 2 * time.Second, Margin: 500 * time.Millisecond}, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(runCtx) }()

	first, err := m.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(ctx, first.Lease()); err != nil {
		t.Fatal(err)
	}
	<-first.Done()
	second, err := m.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second.Lease() == first.Lease() {
		t.Fatal("manager handed out the lost session again")
	}
	poll.For(t, 10*time.Second, "a lost session counted", func() bool { return testutil.ToFloat64(m.lost) == 1 })

	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if second.Err() == nil {
		t.Fatal("session still alive after Run returned")
	}
	ttl, err := cli.TimeToLive(ctx, second.Lease())
	if err != nil {
		t.Fatal(err)
	}
	if ttl.TTL > 0 {
		t.Fatalf("lease not revoked on shutdown (ttl %d)", ttl.TTL)
	}
}
