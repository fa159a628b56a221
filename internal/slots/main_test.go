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

// startSemaphore runs a semaphore's view for the life of the test and waits
// for its first read.
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
	return s
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
