package worker

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// The claim lead grows with the claim round trips, so a worker on a slow
// etcd may claim a run well before it is due; but never before an earlier
// run of the same job that it would leave without room (fair order,
// yieldTo: the test fails without the yield). Here w1's lead is 145ms (25ms and three
// round trips of 40ms); run A is ranked to w0 (dead) first, run B, 50ms
// later, to w1. Claimed at its lead, B would take the job's only slot
// while A waits for a backup, and A would then be skipped for an overlap
// that a claim in tick order never makes.
func TestAnEarlyClaimWaitsForTheJobsEarlierRun(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(t0)
	job := jobstest.HTTPJob("one", "@every 1h", "http://127.0.0.1:1/")
	tw, exec := startFakeClockWorker(t, "/lead/", job, clock)
	cli, layout, cfg, w, view := tw.cli, tw.layout, tw.cfg, tw.w, tw.view
	w.claimRTT.avg.Store(int64(40 * time.Millisecond))
	if got := w.lead(); got != 145*time.Millisecond {
		t.Fatalf("lead %s with claims of 40ms, want 145ms", got)
	}
	key := func(at time.Time) string { return layout.Entry("one", runs.ID("one", at)) + "#1" }
	var a time.Time
	for c := t0.Add(time.Second); a.IsZero(); c = c.Add(10 * time.Millisecond) {
		if w.members.rank("w1", key(c), t0) == 1 && w.members.rank("w1", key(c.Add(50*time.Millisecond)), t0) == 0 {
			a = c
		}
	}
	b := a.Add(50 * time.Millisecond)
	for _, at := range []time.Time{a, b} {
		putEntry(t, cli, layout, queue.NewEntry(runs.ID("one", at), &cfg.Jobs[0], nil, at, at, 1, runs.Schedule))
	}
	poll.For(t, 30*time.Second, "the worker's view of both runs", func() bool {
		return view.Find(runs.ID("one", a)) != nil && view.Find(runs.ID("one", b)) != nil
	})
	claimed := func(at time.Time) bool {
		for _, s := range tw.sem.List() {
			if s.RunID == runs.ID("one", at) {
				return true
			}
		}
		return false
	}
	// B's claim time under the lead: A is pending, so B is not claimed.
	clock.Advance(b.Add(-w.lead()).Sub(t0))
	if poll.Within(2*time.Second, func() bool { return claimed(b) }) {
		t.Fatalf("B claimed %s before it was due while A, due before it, was pending", w.lead())
	}
	// Past B's due time and A's takeover: A is claimed first and runs,
	// then B.
	clock.Advance(a.Add(300 * time.Millisecond).Sub(clock.Now()))
	for _, at := range []time.Time{a, b} {
		select {
		case run := <-exec.started:
			if run.RunID != runs.ID("one", at) {
				t.Fatalf("started %s, want %s", run.RunID, runs.ID("one", at))
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not start", runs.ID("one", at))
		}
		exec.release <- struct{}{}
		if rec := waitRecord(t, cli, layout, runs.ID("one", at)); rec.Outcome != runs.Succeeded {
			t.Fatalf("%s: %s %q", runs.ID("one", at), rec.Outcome, rec.Error)
		}
	}
}
