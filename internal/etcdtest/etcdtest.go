// Package etcdtest starts a real embedded etcd member for tests, on loopback
// ports chosen by the kernel and a temporary data dir, and hands out clients.
package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/etcdsched/scheduler/internal/embedetcd"
)

// Cluster is one embedded member owned by a test.
type Cluster struct {
	t      testing.TB
	server *embedetcd.Server
}

// Start runs a member for the life of the test; it is closed in t.Cleanup
// after every client the test made through it.
func Start(t testing.TB) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := embedetcd.Start(ctx, embedetcd.Options{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	t.Cleanup(s.Close)
	return &Cluster{t: t, server: s}
}

// Endpoints are the member's client URLs.
func (c *Cluster) Endpoints() []string { return c.server.Endpoints() }

// Client returns a new client (its own gRPC connection) closed at cleanup.
func (c *Cluster) Client() *clientv3.Client {
	c.t.Helper()
	return NewClient(c.t, c.Endpoints())
}

// NewClient connects to endpoints (for example through a test proxy) and
// closes the client at cleanup.
func NewClient(t testing.TB, endpoints []string) *clientv3.Client {
	t.Helper()
	return NewClientWith(t, endpoints)
}

// NewClientWith is NewClient dialing with opts as well (a replica's
// watch.EventCounter, say).
func NewClientWith(t testing.TB, endpoints []string, opts ...grpc.DialOption) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: opts,
	})
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// DeletedAt reads watch until it carries a delete and returns when that
// event arrived; the test fails with what if ctx ends first. Expiry tests
// use it to time the server's delete of a lease-bound key.
func DeletedAt(t testing.TB, ctx context.Context, watch clientv3.WatchChan, what string) time.Time {
	t.Helper()
	for {
		select {
		case resp, ok := <-watch:
			if !ok {
				t.Fatalf("%s: the watch closed", what)
			}
			if err := resp.Err(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypeDelete {
					return time.Now()
				}
			}
		case <-ctx.Done():
			t.Fatal(what)
		}
	}
}

// Value is key's value as cli reads it now, "" when there is none.
func Value(t testing.TB, cli *clientv3.Client, key string) string {
	t.Helper()
	resp, err := cli.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}
