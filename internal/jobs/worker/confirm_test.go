package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/session"
	"github.com/etcdsched/scheduler/internal/slots"
)

// staleSlots claims through a semaphore whose view stopped, once set: it
// keeps showing whatever held a slot when it stopped.
type staleSlots struct {
	*slots.Semaphore
	mu    sync.Mutex
	stale *slots.Semaphore
}

func (s *staleSlots) sem() *slots.Semaphore {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stale != nil {
		return s.stale
	}
	return s.Semaphore
}

func (s *staleSlots) Claim(ctx context.Context, sess *session.Session, req slots.Request) (*slots.Held, error) {
	return s.sem().Claim(ctx, sess, req)
}

// A run the view refuses is skipped only once etcd refuses it too: a view
// that has not yet seen the previous run's slot freed (its watch delivers
// apart from the queue's) must not skip a run triggered just after that
// run ended. Without the confirming read the run here is recorded
// "skipped: all 1 slots taken".
func TestSkipWaitsForEtcdsRefusal(t *testing.T) {
	job := jobstest.WithDefaults(jobstest.Job("j", jobstest.FarTick(time.Now())))
	job.MaxConcurrency, job.Overlap = 1, config.OverlapSkip
	exec := doneExecutor{started: make(chan string, 4)}
	wrapped := &staleSlots{}
	tw := startTestWorker(t, "/confirm/", job, exec, testWorkerOptions{wrap: func(s *slots.Semaphore) Slots {
		wrapped.Semaphore = s
		return wrapped
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := tw.sess.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before, err := tw.sem.Claim(ctx, sess, slots.Request{Job: "j", MaxConcurrency: 1, Value: slots.Value{RunID: "j@before", Holder: "other"}})
	if err != nil {
		t.Fatal(err)
	}
	// A second view of the slots, stopped while the run before holds j's
	// slot.
	stale, err := slots.New(tw.cli, tw.layout, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	vctx, vcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	stale.Want()
	go func() { done <- stale.Run(vctx) }()
	poll.For(t, 30*time.Second, "the second view read", stale.Loaded)
	vcancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := stale.Free(slots.JobSlot, "j", 1); n != 0 {
		t.Fatalf("the stopped view shows %d free slots of j, want 0", n)
	}
	wrapped.mu.Lock()
	wrapped.stale = stale
	wrapped.mu.Unlock()
	if err := tw.sem.Release(ctx, before); err != nil {
		t.Fatal(err)
	}

	now := time.Now().UTC()
	id := runs.ID("j", now)
	tw.put(t, queue.NewEntry(id, &tw.cfg.Jobs[0], nil, now, now, 1, runs.Manual))
	if rec := waitRecord(t, tw.cli, tw.layout, id); rec.Outcome != runs.Succeeded {
		t.Fatalf("run after the slot freed: %s %q, want succeeded", rec.Outcome, rec.Error)
	}
}
