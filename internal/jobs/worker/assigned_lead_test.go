package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/assign"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// An assignment is taken up, and its runs claimed, up to half a second
// before its instant (at most a quarter of the time to its jobs' next
// tick), and
// its runs start at the instant: a burst's claims are in etcd before the
// second they are due.
func TestAnAssignmentIsClaimedAheadOfItsInstant(t *testing.T) {
	t0 := time.Now().Truncate(time.Second).Add(time.Hour).UTC()
	clock := clockwork.NewFakeClockAt(t0)
	exec := &countingExecutor{started: make(chan string, 8)}
	fast := jobstest.HTTPJob("fast", "@every 200ms", "http://127.0.0.1:1/")
	tw := startTestWorker(t, "/lean-lead/", job("hourly"), exec, testWorkerOptions{clock: clock, jobs: []config.Job{fast}})
	hourlyAt, fastAt := t0.Add(10*time.Second), t0.Add(20*time.Second)
	a := tw.assignJobs(t, tw.incarnation(t), hourlyAt, "hourly")
	tw.assignJobs(t, tw.incarnation(t), fastAt, "fast")
	poll.For(t, 30*time.Second, "the hourly job's assignment taken up half a second ahead", func() bool {
		return tw.w.runner.view.next().Equal(hourlyAt.Add(-maxAssignedLead))
	})

	clock.Advance(hourlyAt.Add(-maxAssignedLead).Sub(clock.Now()))
	poll.For(t, 30*time.Second, "the hourly run claimed before its instant", func() bool {
		return tw.count(t, tw.layout.ClaimMarker(a.Worker, a.At, a.Group, 0)) == 1 && len(tw.held(t)) == 1
	})
	select {
	case id := <-exec.started:
		t.Fatalf("%s started before its instant", id)
	default:
	}
	clock.Advance(hourlyAt.Sub(clock.Now()))
	select {
	case <-exec.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the claimed run did not start at its instant")
	}
	// fast ticks every 200ms: taken up 50ms ahead, well after its
	// previous tick was due.
	poll.For(t, 30*time.Second, "the fast job's assignment taken up 50ms ahead", func() bool {
		return tw.w.runner.view.next().Equal(fastAt.Add(-50 * time.Millisecond))
	})
}

// A run refused before its instant because the run before still holds
// its job's slot is claimed again at the instant, and runs if that run has
// ended by then: no queue entry, no skip.
func TestARunRefusedAheadIsClaimedAgainAtItsInstant(t *testing.T) {
	t0 := time.Now().Truncate(time.Second).Add(time.Hour).UTC()
	clock := clockwork.NewFakeClockAt(t0)
	exec := &countingExecutor{started: make(chan string, 8)}
	tw := startTestWorker(t, "/lean-again/", job("hourly"), exec, testWorkerOptions{clock: clock})
	at := t0.Add(10 * time.Second)
	from := tw.revision(t)
	_, before := tw.refusedAhead(t, clock, at, "hourly")
	tw.freeSlot(t, "hourly", before[0])
	clock.Advance(at.Sub(clock.Now()))
	id := runs.ID("hourly", at)
	if rec := waitRecord(t, tw.cli, tw.layout, id); rec.Outcome != runs.Succeeded {
		t.Errorf("recorded %s %q, want succeeded: claimed again at its instant", rec.Outcome, rec.Error)
	}
	if tw.existedBetween(t, tw.layout.Entry("hourly", id), from, tw.revision(t)) {
		t.Error("the run took the queue path: its entry was written")
	}
	tw.waitSettled(t)
}

// More runs than one chunk are refused ahead (their slots taken), and the
// assignment is gone by the instant (moved or withdrawn): the first chunk
// tried again fails, and every run gives its place under max_parallel
// back, those of the chunks not sent too.
func TestRunsRefusedAheadGiveTheirPlacesBackWhenTheAssignmentGoes(t *testing.T) {
	t0 := time.Now().Truncate(time.Second).Add(time.Hour).UTC()
	clock := clockwork.NewFakeClockAt(t0)
	names := make([]string, maxChunk+3)
	for i := range names {
		names[i] = fmt.Sprintf("j%02d", i)
	}
	tw, _ := startCounted(t, "/lean-gone/", testWorkerOptions{clock: clock, maxParallel: 2 * len(names)}, names...)
	for _, name := range names {
		tw.holdSlot(t, name, name+"@before")
	}
	at := t0.Add(10 * time.Second)
	a := tw.assignJobs(t, tw.incarnation(t), at, names...)
	poll.For(t, 30*time.Second, "the assignment in the worker's view", func() bool { return !tw.w.runner.view.next().IsZero() })
	clock.Advance(at.Add(-maxAssignedLead).Sub(clock.Now()))
	poll.For(t, 30*time.Second, "both chunks claimed ahead, refused", func() bool {
		return tw.count(t, tw.layout.ClaimMarker(a.Worker, a.At, a.Group, 1)) == 1
	})
	if _, err := tw.cli.Delete(context.Background(), a.Key(tw.layout)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(at.Sub(clock.Now()))
	poll.Until(t, 30*time.Second, "every place given back", func() (bool, string) {
		tw.w.core.mu.Lock()
		defer tw.w.core.mu.Unlock()
		return len(tw.w.core.active) == 0, fmt.Sprintf("%d runs still active", len(tw.w.core.active))
	})
}

// A run refused ahead whose round comes back to it after its starting
// deadline (a worker behind sends an assignment's chunks for seconds) is
// recorded missed, not started, though its slot and a place are free by
// then: a tick past its starting deadline is never started.
func TestARunRefusedAheadIsNotStartedPastItsStartingDeadline(t *testing.T) {
	t0 := time.Now().Truncate(time.Second).Add(time.Hour).UTC()
	clock := clockwork.NewFakeClockAt(t0)
	exec := &countingExecutor{started: make(chan string, 8)}
	j := job("hourly")
	j.StartingDeadline = config.Duration(500 * time.Millisecond)
	tw := startTestWorker(t, "/lean-again-late/", j, exec, testWorkerOptions{clock: clock})
	at := t0.Add(10 * time.Second)
	_, before := tw.refusedAhead(t, clock, at, "hourly")
	tw.freeSlot(t, "hourly", before[0])
	clock.Advance(at.Add(2 * time.Second).Sub(clock.Now()))
	if rec := waitRecord(t, tw.cli, tw.layout, runs.ID("hourly", at)); rec.Outcome != runs.Missed {
		t.Errorf("recorded %s %q, want missed: two seconds late, its starting deadline 500ms", rec.Outcome, rec.Error)
	}
	tw.waitSettled(t)
	if n := exec.runs.Load(); n != 0 {
		t.Errorf("%d runs executed, want none", n)
	}
}

// refusedAhead holds each of jobs' slots by a run before, assigns their
// ticks at at, and moves clock to where the worker claims them ahead: the
// claim, refused, leaves its marker. It returns the assignment and the
// holds' leases, in jobs' order.
func (tw *testWorker) refusedAhead(t *testing.T, clock *clockwork.FakeClock, at time.Time, jobs ...string) (assign.Assignment, []clientv3.LeaseID) {
	t.Helper()
	var leases []clientv3.LeaseID
	for _, name := range jobs {
		leases = append(leases, tw.holdSlot(t, name, name+"@before"))
	}
	a := tw.assignJobs(t, tw.incarnation(t), at, jobs...)
	poll.For(t, 30*time.Second, "the assignment in the worker's view", func() bool { return !tw.w.runner.view.next().IsZero() })
	clock.Advance(at.Add(-maxAssignedLead).Sub(clock.Now()))
	poll.For(t, 30*time.Second, "the claim ahead, refused", func() bool {
		return tw.count(t, tw.layout.ClaimMarker(a.Worker, a.At, a.Group, 0)) == 1
	})
	return a, leases
}

// freeSlot ends the hold of job's slot on lease and waits until the slot
// is free.
func (tw *testWorker) freeSlot(t *testing.T, job string, lease clientv3.LeaseID) {
	t.Helper()
	if _, err := tw.cli.Revoke(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, "the slot freed", func() bool { return tw.running(t, job) == 0 })
}
