package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// Follow from a revision the history no longer holds says so at once, with
// an error a caller can tell apart, rather than resuming forever.
func TestFollowFromCompactedRevision(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	put(t, ctx, cli, "a", "1")
	if _, err := cli.Compact(ctx, put(t, ctx, cli, "a", "2")); err != nil {
		t.Fatal(err)
	}
	w := Watch{Client: cli, Prefixes: []string{testPrefix}}
	if err := w.Follow(ctx, newCopy(cli, testPrefix), 1); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("Follow from revision 1 after a compaction: %v, want %v", err, rpctypes.ErrCompacted)
	}
}

// prefixLog records what each prefix was handed, and fails Apply once, on
// the first event of a chosen key.
type prefixLog struct {
	client *clientv3.Client
	poison string

	mu       sync.Mutex
	reads    int
	events   map[string][]int64 // by prefix: revisions in the order applied
	pauses   []bool
	poisoned bool
}

func (p *prefixLog) Read(ctx context.Context) (int64, error) {
	resp, err := p.client.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("prefix log: read: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reads++
	return resp.Header.Revision, nil
}

func (p *prefixLog) Apply(_ context.Context, prefix string, events []*clientv3.Event, _ int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ev := range events {
		if string(ev.Kv.Key) == p.poison && !p.poisoned {
			p.poisoned = true
			return errors.New("cannot take this one")
		}
		p.events[prefix] = append(p.events[prefix], ev.Kv.ModRevision)
	}
	return nil
}

func (p *prefixLog) Paused(_ string, _ error, reread bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pauses = append(p.pauses, reread)
}

func (p *prefixLog) Resumed(string) {}

// Two prefixes are followed apart: each gets its own events, in order, and
// never the other's. A failed Apply makes Run read afresh, and the watches
// go on from that read.
func TestPrefixesFollowedApartAndApplyErrorRereads(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const a, b = "/a/", "/b/"
	h := &prefixLog{client: cli, poison: b + "poison", events: map[string][]int64{}}
	runWatch(t, Watch{Client: cli, Prefixes: []string{a, b}}, h)
	poll.For(t, 20*time.Second, "the first read", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.reads == 1
	})
	var want = map[string][]int64{}
	for i := range 4 {
		for _, prefix := range []string{a, b} {
			want[prefix] = append(want[prefix], put(t, ctx, cli, fmt.Sprintf("%sk%d", prefix, i), "v"))
		}
	}
	applied := func(what string) {
		t.Helper()
		poll.Until(t, 20*time.Second, what, func() (bool, string) {
			h.mu.Lock()
			defer h.mu.Unlock()
			ok := slices.Equal(h.events[a], want[a]) && slices.Equal(h.events[b], want[b])
			return ok, fmt.Sprintf("got %v, want %v", h.events, want)
		})
	}
	applied("both prefixes' events, each in order")
	put(t, ctx, cli, h.poison, "v") // refused: Run reads again, past it
	poll.For(t, 20*time.Second, "the re-read after the failed Apply", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.reads == 2
	})
	want[a] = append(want[a], put(t, ctx, cli, a+"after", "v"))
	applied("the events after the re-read")
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Equal(h.pauses, []bool{true, true}) {
		t.Fatalf("Paused (reread) calls %v, want one per prefix before the re-read", h.pauses)
	}
}
