package worker

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
	"github.com/etcdsched/scheduler/internal/target"
)

// failingReleases is the real semaphore whose first releases fail before
// reaching etcd, as a release does whose every try timed out while the
// session stayed alive (a slow or briefly leaderless etcd).
type failingReleases struct {
	*slots.Semaphore
	fail  int32
	calls atomic.Int32
}

func (f *failingReleases) Release(ctx context.Context, h *slots.Held, then ...clientv3.Op) error {
	if f.calls.Add(1) <= f.fail {
		return errors.New("etcdserver: request timed out")
	}
	return f.Semaphore.Release(ctx, h, then...)
}

type doneExecutor struct{ started chan string }

func (d doneExecutor) Execute(_ context.Context, _ *config.Job, run target.Run) target.Result {
	d.started <- run.RunID
	return target.Result{Outcome: runs.Succeeded}
}

// A run's release that fails while the worker's session lives is tried
// again until it applies. Before, it was given up: the key slot stayed on
// the live lease with the running entry matching it, so the reaper saw a
// live run and every later run of the key found the slot taken, for as
// long as the replica ran (the fault suite's keyed job stopped starting
// after a fault). The test fails with one release attempt: the first run's
// record never comes and the second run never starts.
func TestReleaseThatFailsIsTriedAgainWhileTheSessionLives(t *testing.T) {
	job := jobstest.WithDefaults(jobstest.Job("keyed", jobstest.FarTick(time.Now())))
	job.MaxConcurrency, job.Overlap = 1, config.OverlapQueue
	job.ConcurrencyKey = "{{ .Input.customer_id }}"
	flaky := &failingReleases{fail: 2}
	exec := doneExecutor{started: make(chan string, 4)}
	tw := startTestWorker(t, "/settle/", job, exec, testWorkerOptions{wrap: func(s *slots.Semaphore) Slots {
		flaky.Semaphore = s
		return flaky
	}})

	put := func(at time.Time) string {
		id := runs.ID("keyed", at)
		e := queue.NewEntry(id, &tw.cfg.Jobs[0], nil, at, at, 1, runs.Schedule)
		e.ConcurrencyKey = "c-1001"
		tw.put(t, e)
		return id
	}
	now := time.Now().UTC().Truncate(time.Second)
	first := put(now)
	if rec := waitRecord(t, tw.cli, tw.layout, first); rec.Outcome != runs.Succeeded {
		t.Fatalf("the first run: %s %q, want succeeded once its release applied", rec.Outcome, rec.Error)
	}
	if n := flaky.calls.Load(); n < 3 {
		t.Fatalf("%d release attempts, want the two failures and a third that applied", n)
	}
	second := put(now.Add(time.Second))
	if rec := waitRecord(t, tw.cli, tw.layout, second); rec.Outcome != runs.Succeeded {
		t.Errorf("the second run of the key: %s %q, want succeeded (the slot free again)", rec.Outcome, rec.Error)
	}
	poll.For(t, 30*time.Second, "no slot held once both runs ended", func() bool { return len(tw.held(t)) == 0 })
}

// A run cut by the end of the shutdown grace (on_shutdown: cancel) reads a
// sentence in its record, not the worker's error text.
func TestTheShutdownCauseCarriesASentence(t *testing.T) {
	var m interface{ UserMessage() string }
	if !errors.As(errShutdown, &m) || !strings.Contains(m.UserMessage(), "shutdown_grace") || strings.Contains(m.UserMessage(), "worker: ") {
		t.Fatalf("errShutdown %q has no sentence for people naming worker.shutdown_grace", errShutdown)
	}
}
