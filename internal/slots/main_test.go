package slots

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/session"
)

func TestMain(m *testing.M) { etcdtest.VerifyNoLeaks(m) }

const testPrefix = "/scheduler/"

// testLayout is the key layout under testPrefix.
var testLayout = keys.New(testPrefix)

// startSemaphore runs a semaphore's view for the life of the test, wants
// the job slots' view and waits for its first read.
func startSemaphore(t testing.TB, cli *clientv3.Client) *Semaphore {
	t.Helper()
	s, err := New(cli, testLayout, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return runSemaphore(t, s)
}

func runSemaphore(t testing.TB, s *Semaphore) *Semaphore {
	t.Helper()
	runView(t, s)
	wait, cancelWait := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelWait()
	if err := s.waitReady(wait); err != nil {
		t.Fatal("view never became ready: ", err)
	}
	return s
}

// runView runs s's view for the life of the test and waits for its first
// read of the resources and rate windows; the job slots' is read when
// wanted.
func runView(t testing.TB, s *Semaphore) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-s.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("view never became ready")
	}
}

// newSession opens a session that is orphaned (left to expire) at cleanup,
// which works whether or not its client can still reach etcd.
func newSession(t testing.TB, cli *clientv3.Client, ttl, margin time.Duration) *session.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := session.New(ctx, cli, session.Options{TTL: ttl, Margin: margin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Orphan)
	return s
}

// claimSetup is a slots test's etcd: a client, a session on it (5s TTL)
// and a context bounding the test's calls.
func claimSetup(t *testing.T) (*clientv3.Client, *session.Session, context.Context) {
	t.Helper()
	cli := etcdtest.Start(t).Client()
	sess, ctx := sessionFor(t, cli)
	return cli, sess, ctx
}

// sessionFor is a session on cli (5s TTL) and a context bounding the
// test's calls.
func sessionFor(t *testing.T, cli *clientv3.Client) (*session.Session, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return newSession(t, cli, 5*time.Second, time.Second), ctx
}

// claimWait claims, waiting for the view to change after each ErrFull.
func claimWait(ctx context.Context, s *Semaphore, sess *session.Session, req Request) (*Held, error) {
	for {
		changed := s.Changed()
		h, err := s.Claim(ctx, sess, req)
		if !errors.Is(err, ErrFull) {
			return h, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, err
		}
	}
}

func keysUnder(t testing.TB, cli *clientv3.Client, prefix string) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]int64{}
	for _, kv := range resp.Kvs {
		keys[string(kv.Key)] = kv.CreateRevision
	}
	return keys
}

// load reads the whole view, as Run's two watches do on their first
// read.
func (s *Semaphore) load(ctx context.Context) error {
	if _, err := s.loadLimits(ctx); err != nil {
		return err
	}
	_, err := s.loadSlots(ctx)
	return err
}

// follow watches the three prefixes from the revisions after the view's,
// as Run's two watches do, until ctx ends, a history is compacted or an
// apply fails.
func (s *Semaphore) follow(ctx context.Context) error {
	s.mu.Lock()
	from := [3]int64{s.seen[slotsView] + 1, s.seen[resourcesView] + 1, s.seen[ratesView] + 1}
	s.mu.Unlock()
	w := s.watchOf(s.layout.Slots(), s.layout.Resources(), s.layout.Rates())
	return w.Follow(ctx, wholeView{s}, from[0], from[1], from[2])
}

// wholeView hands each prefix's events to the handler Run gives them to.
type wholeView struct{ s *Semaphore }

func (v wholeView) Read(ctx context.Context) (int64, error) { return 0, v.s.load(ctx) }

func (v wholeView) Apply(ctx context.Context, prefix string, events []*clientv3.Event, rev int64) error {
	if prefix == v.s.layout.Slots() {
		return slotsHandler(v).Apply(ctx, prefix, events, rev)
	}
	return limitsHandler(v).Apply(ctx, prefix, events, rev)
}

// viewList is every held slot the view shows, in Held's order.
func (s *Semaphore) viewList() []Info {
	s.mu.Lock()
	es := make([]entry, 0, len(s.entries))
	for _, e := range s.entries {
		es = append(es, e)
	}
	s.mu.Unlock()
	return s.infosOf(es)
}

// viewInUse is how many slots of job the view shows held, whatever their
// concurrency keys.
func (s *Semaphore) viewInUse(job string) int {
	n := 0
	for _, i := range s.viewList() {
		if i.Job == job {
			n++
		}
	}
	return n
}
