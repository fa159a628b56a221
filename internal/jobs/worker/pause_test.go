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
// worse order): the run must not start on that claim. It is given back,
// unrecorded, in the release (the lease still lives here, so the release
// applies), and runs once on a slot claimed afresh: recorded lost, it read
// as a run that may have started, and its tick did not run.
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
	var first int64
	poll.For(t, 30*time.Second, "the run claimed 25ms before it is due", func() bool {
		for _, s := range tw.held(t) {
			if s.RunID == e.RunID {
				first = s.FencingToken
				return true
			}
		}
		return false
	})
	// The pause: the session's clock is now an hour on, its guard's
	// timer (real, set for seconds from now) not fired.
	sessionClock.skew.Store(int64(time.Hour))
	clock.Advance(25 * time.Millisecond)
	run := exec.next(t, "the run given back did not start on a claim of its own")
	if run.FencingToken == first {
		t.Fatalf("%s started on the claim whose session was past its deadline (token %d)", run.RunID, first)
	}
	close(exec.release)
	rec := waitRecord(t, tw.cli, tw.layout, e.RunID)
	if rec.Outcome != runs.Succeeded || rec.FencingToken != run.FencingToken {
		t.Errorf("recorded %s (token %d) %q, want succeeded by the run that started (token %d)", rec.Outcome, rec.FencingToken, rec.Error, run.FencingToken)
	}
	select {
	case again := <-exec.started:
		t.Errorf("%s started a second time (token %d)", again.RunID, again.FencingToken)
	default:
	}
}

// The same pause on the lean path: an assigned run claimed ahead, its
// session past its deadline when it is due, does not start on that claim.
// Its release hands it to the queue path (a pending entry, as a run
// refused at its claim takes), where it runs once on a claim of its own:
// no record says lost, and no tick is left unrun.
func TestAnAssignedRunDoesNotStartPastTheSessionDeadline(t *testing.T) {
	t0 := time.Now().Truncate(time.Second).Add(time.Hour).UTC()
	clock := clockwork.NewFakeClockAt(t0)
	sessionClock := &skewedClock{Clock: clockwork.NewRealClock()}
	exec := &heldExecutor{started: make(chan target.Run, 4), release: make(chan struct{})}
	tw := startTestWorker(t, "/pause-lean/", job("hourly"), exec,
		testWorkerOptions{clock: clock, sessionClock: sessionClock})
	at := t0.Add(10 * time.Second)
	a := tw.assignJobs(t, tw.incarnation(t), at, "hourly")
	runID := runs.ID("hourly", at)
	poll.For(t, 30*time.Second, "the assignment taken up ahead", func() bool {
		return tw.w.runner.view.next().Equal(at.Add(-maxAssignedLead))
	})
	clock.Advance(at.Add(-maxAssignedLead).Sub(clock.Now()))
	var first int64
	poll.For(t, 30*time.Second, "the run claimed before its instant", func() bool {
		if tw.count(t, tw.layout.ClaimMarker(a.Worker, a.At, a.Group, 0)) != 1 {
			return false
		}
		for _, s := range tw.held(t) {
			if s.RunID == runID {
				first = s.FencingToken
				return true
			}
		}
		return false
	})
	sessionClock.skew.Store(int64(time.Hour))
	clock.Advance(at.Sub(clock.Now()))
	run := exec.next(t, "the run handed to the queue path did not start on a claim of its own")
	if run.RunID != runID || run.FencingToken == first {
		t.Fatalf("%s started with token %d; want %s on a claim other than the untrusted one (token %d)", run.RunID, run.FencingToken, runID, first)
	}
	close(exec.release)
	rec := waitRecord(t, tw.cli, tw.layout, runID)
	if rec.Outcome != runs.Succeeded || rec.FencingToken != run.FencingToken {
		t.Errorf("recorded %s (token %d) %q, want succeeded by the run that started (token %d)", rec.Outcome, rec.FencingToken, rec.Error, run.FencingToken)
	}
	select {
	case again := <-exec.started:
		t.Errorf("%s started a second time (token %d)", again.RunID, again.FencingToken)
	default:
	}
}
