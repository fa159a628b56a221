package worker

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/target"
)

// skewedClock is the real clock moved ahead by skew: its timers are the
// real clock's, so a jump of its Now fires none of them.
type skewedClock struct {
	clockwork.Clock
	skew atomic.Int64
}

func (c *skewedClock) Now() time.Time { return c.Clock.Now().Add(time.Duration(c.skew.Load())) }

// A replica paused between a run's claim and its due time (the long fault
// profile: SIGSTOP 25ms before the due time, for 10s at session_ttl 5s)
// wakes with the run's start and the session guard's timer due at once,
// in either order; started first, the run ran on a lease the server had
// expired, beside the slot's next holder. Here the session's clock jumps
// past its guard's deadline while the guard's timer has not fired (the
// worse order): the run must not start, and is recorded lost.
func TestARunDoesNotStartPastTheSessionDeadline(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(t0)
	sessionClock := &skewedClock{Clock: clockwork.NewRealClock()}
	exec := &heldExecutor{started: make(chan target.Run, 4), release: make(chan struct{})}
	tw := startTestWorker(t, "/pause/", jobstest.Job("one", "@every 1h"), exec,
		testWorkerOptions{clock: clock, sessionClock: sessionClock})
	at := t0.Add(time.Second)
	e := queue.NewEntry(runs.ID("one", at), &tw.cfg.Jobs[0], nil, at, at, 1, runs.Schedule)
	tw.put(t, e)
	poll.For(t, 30*time.Second, "the worker's view of the run", func() bool { return tw.view.Find(e.RunID) != nil })
	clock.Advance(at.Add(-25 * time.Millisecond).Sub(t0))
	poll.For(t, 30*time.Second, "the run claimed 25ms before it is due", func() bool {
		for _, s := range tw.held(t) {
			if s.RunID == e.RunID {
				return true
			}
		}
		return false
	})
	// The pause: the session's clock is now an hour on, its guard's
	// timer (real, set for seconds from now) not fired.
	sessionClock.skew.Store(int64(time.Hour))
	clock.Advance(25 * time.Millisecond)
	rec := waitRecord(t, tw.cli, tw.layout, e.RunID)
	select {
	case run := <-exec.started:
		t.Fatalf("%s started on a session past its deadline", run.RunID)
	default:
	}
	if rec.Outcome != runs.Lost {
		t.Errorf("recorded %s %q, want lost", rec.Outcome, rec.Error)
	}
}
