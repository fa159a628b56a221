package mirror

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

const testPrefix = "/m/"

// copyHandler is a mirror.Handler that keeps the keys and counts resets.
type copyHandler struct {
	mu sync.Mutex
	etcdtest.Copy
	resets int
}

func (c *copyHandler) Reset(kvs []*mvccpb.KeyValue, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Copy.Reset(kvs, rev)
	c.resets++
}

func (c *copyHandler) Apply(events []*clientv3.Event, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(events) == 0 {
		c.Wrong = append(c.Wrong, fmt.Sprintf("Apply without events at %d", rev))
	}
	c.Copy.Apply(events)
}

// A mirror whose watch was cut while the prefix changed and the history was
// compacted resets to the current keys and then follows (docs/design.md#the-safety-rules, rule 8).
func TestMirrorResetsAfterCompaction(t *testing.T) {
	cluster := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, cluster.Endpoints()[0])
	cli := etcdtest.NewClient(t, []string{proxy.Endpoint()})
	witness := cluster.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	put := putter(t, ctx, witness)

	h := &copyHandler{}
	defer runMirror(t, ctx, cli, h)()
	waitFor(t, h, put(testPrefix+"a", "1"), map[string]string{testPrefix + "a": "1"})

	proxy.Cut()
	put(testPrefix+"b", "1")
	if _, err := witness.Delete(ctx, testPrefix+"a"); err != nil {
		t.Fatal(err)
	}
	if _, err := witness.Compact(ctx, put("/elsewhere", "x")); err != nil {
		t.Fatal(err)
	}
	proxy.Restore()
	waitFor(t, h, put(testPrefix+"c", "1"), map[string]string{testPrefix + "b": "1", testPrefix + "c": "1"})

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.resets != 2 {
		t.Errorf("%d resets, want 2: the first read and the one after the compaction", h.resets)
	}
	if len(h.Wrong) > 0 {
		t.Error(h.Wrong)
	}
}

// putter puts through cli and returns each put's revision.
func putter(t *testing.T, ctx context.Context, cli *clientv3.Client) func(key, value string) int64 {
	return func(key, value string) int64 {
		t.Helper()
		resp, err := cli.Put(ctx, key, value)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
}

// runMirror runs Run over testPrefix into h until the stop it returns,
// which checks that Run returned without error within 5s of it.
func runMirror(t *testing.T, ctx context.Context, cli *clientv3.Client, h Handler) (stop func()) {
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(mctx, cli, testPrefix, h, nil) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return within 5s of its ctx being cancelled")
		}
	}
}

func waitFor(t *testing.T, h *copyHandler, rev int64, want map[string]string) {
	t.Helper()
	poll.Until(t, 20*time.Second, fmt.Sprintf("the mirror at revision %d", rev), func() (bool, string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.Rev < rev || !maps.Equal(h.State, want) {
			return false, fmt.Sprintf("at %d: %v, want %v", h.Rev, h.State, want)
		}
		return true, ""
	})
}
