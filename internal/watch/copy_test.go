package watch

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

// copyHandler keeps a copy of one prefix and records what it was handed, so
// a test can tell a lost event (the copy differs from etcd) from one applied
// twice or out of order (an event at or below the revision the copy is
// already at).
type copyHandler struct {
	client *clientv3.Client
	prefix string

	mu sync.Mutex
	etcdtest.Copy
	reads   []int64 // the revision of each Read
	applied []int64 // every applied event's revision, in order
	pauses  []bool  // Paused's reread, in order
}

func newCopy(client *clientv3.Client, prefix string) *copyHandler {
	return &copyHandler{client: client, prefix: prefix}
}

func (c *copyHandler) Read(ctx context.Context) (int64, error) {
	resp, err := c.client.Get(ctx, c.prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("copy: read: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Reset(resp.Kvs, resp.Header.Revision)
	c.reads = append(c.reads, c.Rev)
	return c.Rev, nil
}

func (c *copyHandler) Apply(_ context.Context, prefix string, events []*clientv3.Event, rev int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prefix != c.prefix {
		c.Wrong = append(c.Wrong, fmt.Sprintf("events of prefix %q", prefix))
	}
	c.Copy.Apply(events)
	for _, ev := range events {
		c.applied = append(c.applied, ev.Kv.ModRevision)
	}
	if len(events) == 0 && rev > c.Rev {
		c.Rev = rev // a progress notification
	}
	return nil
}

func (c *copyHandler) Paused(prefix string, _ error, reread bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pauses = append(c.pauses, reread)
}

func (c *copyHandler) Resumed(string) {}

type snapshot struct {
	state   map[string]string
	rev     int64
	reads   []int64
	applied []int64
	pauses  []bool
	wrong   []string
}

func (c *copyHandler) snapshot() snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return snapshot{
		state:   maps.Clone(c.State),
		rev:     c.Rev,
		reads:   append([]int64(nil), c.reads...),
		applied: append([]int64(nil), c.applied...),
		pauses:  append([]bool(nil), c.pauses...),
		wrong:   append([]string(nil), c.Wrong...),
	}
}

// runWatch runs w with h until the test ends, and fails it if Run does not
// return promptly once its ctx is cancelled.
func runWatch(t *testing.T, w Watch, h Handler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := waitReturn(t, done); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
