package worker

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/netproxy"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/target"
)

// logSeen records the messages a logger was given.
type logSeen struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logSeen) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSeen) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logSeen) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logSeen) WithGroup(string) slog.Handler      { return l }
func (l *logSeen) saw(prefix string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		if strings.HasPrefix(m, prefix) {
			return true
		}
	}
	return false
}

// A run refused by a full slot whose skip record etcd does not take (the
// worker's link to etcd is cut) is tried again once etcd answers. Before,
// the worker let it go, trusting "another try" that nothing would bring:
// the entry stayed pending and due for ever, and with overlap: queue every
// later run of its key was skipped as queued behind it (the fault suite's
// keyed job, after an etcd leader was killed). The test fails when the run
// is not parked after the failed write: its record never comes.
func TestUnstartedRecordThatFailsIsTriedAgain(t *testing.T) {
	job := jobstest.WithDefaults(jobstest.Job("one", jobstest.FarTick(time.Now())))
	job.MaxConcurrency, job.Overlap = 1, config.OverlapSkip
	exec := &heldExecutor{started: make(chan target.Run, 4), release: make(chan struct{})}
	var proxy *netproxy.Proxy
	seen := &logSeen{}
	tw := startTestWorker(t, "/unstarted/", job, exec, testWorkerOptions{
		log:    slog.New(seen),
		writes: proxiedWrites(t, &proxy),
	})
	put := func(at time.Time) string {
		id := runs.ID("one", at)
		e := queue.NewEntry(id, &tw.cfg.Jobs[0], nil, at, at, 1, runs.Schedule)
		tw.put(t, e)
		return id
	}
	now := time.Now().UTC().Truncate(time.Second)
	first := put(now)
	exec.next(t, "the first run did not start")

	proxy.Cut()
	second := put(now.Add(time.Second))
	poll.For(t, 30*time.Second, "the worker's failed try to record "+second+" skipped", func() bool {
		return seen.saw("recording the run as not started failed")
	})
	proxy.Restore()
	if rec := waitRecord(t, tw.cli, tw.layout, second); rec.Outcome != runs.Skipped {
		t.Errorf("the second run: %s %q, want skipped (the only slot was taken)", rec.Outcome, rec.Error)
	}
	close(exec.release)
	if rec := waitRecord(t, tw.cli, tw.layout, first); rec.Outcome != runs.Succeeded {
		t.Errorf("the first run: %s %q, want succeeded", rec.Outcome, rec.Error)
	}
}

// proxiedWrites is a testWorkerOptions.writes whose client reaches the
// member through a proxy, set in *proxy, that the test can cut or slow.
func proxiedWrites(t *testing.T, proxy **netproxy.Proxy) func([]string) *clientv3.Client {
	return func(endpoints []string) *clientv3.Client {
		u, err := url.Parse(endpoints[0])
		if err != nil {
			t.Fatal(err)
		}
		if *proxy, err = netproxy.New(u.Host); err != nil {
			t.Fatal(err)
		}
		t.Cleanup((*proxy).Close)
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{(*proxy).Endpoint()}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cli.Close() })
		return cli
	}
}
