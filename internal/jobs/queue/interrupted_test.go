package queue

import (
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/runs"
)

// An interrupted attempt is followed at once by the next attempt, which
// uses none of the retries, until max_interruptions; retries still count
// only the attempts that failed.
func TestInterruptionsUseNoRetry(t *testing.T) {
	at := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	job := jobstest.WithDefaults(config.Job{Name: "r", Schedule: "@every 1m",
		Retries: config.Retries{Max: 1, Backoff: config.Duration(time.Second), MaxBackoff: config.Duration(time.Second)}})
	e := NewEntry(runs.ID("r", at), &job, nil, at, at, 1, runs.Schedule)
	// Two interruptions: each requeued at once, as the next attempt.
	for i := range 2 {
		rec := e.Finished(runs.Interrupted, 0, 1, at, at)
		next := e.Requeue(at, &rec, 2)
		if next == nil {
			t.Fatalf("interruption %d: not requeued, want requeued (max_interruptions 2)", i+1)
		}
		if next.Attempt != e.Attempt+1 || !next.NotBefore.Equal(at) || next.State != Pending {
			t.Errorf("interruption %d: next attempt %d due %s, want %d due at once", i+1, next.Attempt, next.NotBefore, e.Attempt+1)
		}
		e = next
	}
	rec := e.Finished(runs.Interrupted, 0, 1, at, at)
	if next := e.Requeue(at, &rec, 2); next != nil {
		t.Errorf("a third interruption requeued attempt %d past max_interruptions 2", next.Attempt)
	}
	// Attempt 3 fails: its one retry is still there.
	rec = e.Finished(runs.Failed, 0, 1, at, at)
	retry := e.Retry(at, &rec)
	if retry == nil {
		t.Fatalf("attempt %d failed after two interruptions: no retry, want the one of retries.max 1", e.Attempt)
	}
	rec = retry.Finished(runs.Failed, 0, 1, at, at)
	if next := retry.Retry(at, &rec); next != nil {
		t.Errorf("attempt %d retried: retries.max 1 was used already", next.Attempt)
	}
	// on_shutdown: cancel never requeues.
	job.OnShutdown = config.OnShutdownCancel
	c := NewEntry(runs.ID("r", at), &job, nil, at, at, 1, runs.Schedule)
	rec = c.Finished(runs.Interrupted, 0, 1, at, at)
	if next := c.Requeue(at, &rec, 3); next != nil {
		t.Errorf("on_shutdown: cancel: requeued as attempt %d", next.Attempt)
	}
}
