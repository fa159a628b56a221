package worker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// slowToReturn releases at once but returns only once the worker has
// taken the retry its release queued off the pending set: the previous
// attempt is then still active when the retry comes up.
type slowToReturn struct {
	*slots.Semaphore
	tw   atomic.Pointer[testWorker]
	held atomic.Bool
}

func (s *slowToReturn) Release(ctx context.Context, h *slots.Held, then ...clientv3.Op) error {
	if err := s.Semaphore.Release(ctx, h, then...); err != nil {
		return err
	}
	tw := s.tw.Load()
	if tw == nil || s.held.Swap(true) {
		return nil
	}
	poll.Within(20*time.Second, func() bool {
		q := tw.view.Get(tw.layout.Entry(h.Job, h.Value.RunID))
		return q != nil && q.Attempt == 2 && !tw.w.isPending(q.Key)
	})
	return nil
}

// A retry that comes up while its run's previous attempt is still ending
// (the release that queued it has not returned) waits for that attempt's
// end and then runs. Before, the worker dropped it as "busy" and nothing
// brought it back: a replica alone never ran it (CI saw a retried run's
// final record never come).
func TestRetryWhilePreviousAttemptEndsRuns(t *testing.T) {
	job := jobstest.WithDefaults(jobstest.Job("retried", jobstest.FarTick(time.Now())))
	job.Retries.Max = 1
	exec := failOnceExecutor{attempts: make(chan int, 4)}
	wrapped := &slowToReturn{}
	tw := startTestWorker(t, "/retry/", job, exec, testWorkerOptions{wrap: func(s *slots.Semaphore) Slots {
		wrapped.Semaphore = s
		return wrapped
	}})
	wrapped.tw.Store(tw)
	now := time.Now().UTC()
	id := runs.ID("retried", now)
	tw.put(t, queue.NewEntry(id, &tw.cfg.Jobs[0], nil, now, now, 1, runs.Manual))
	poll.For(t, 30*time.Second, "the retry's record", func() bool {
		resp, err := tw.cli.Get(context.Background(), tw.layout.Record("retried", id))
		if err != nil || len(resp.Kvs) == 0 {
			return false
		}
		r, err := runs.DecodeRecord(resp.Kvs[0].Value)
		return err == nil && r.Attempt == 2 && r.Outcome == runs.Succeeded
	})
}

// isPending reports whether the entry at key waits in the pending set.
func (w *Worker) isPending(key string) bool {
	w.queue.mu.Lock()
	defer w.queue.mu.Unlock()
	for _, a := range w.queue.pending {
		if a.key == key {
			return true
		}
	}
	return false
}
