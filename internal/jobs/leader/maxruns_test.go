package leader

import (
	"strconv"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
)

// max_runs: the leader queues exactly that many scheduled runs, moves the
// count in the transactions that queue them, then lets the cursor follow
// the clock; a pause gives the withdrawn runs back, and a new term (a
// handoff) goes on from the stored count.
func TestMaxRunsCountsInTheTickTransactions(t *testing.T) {
	ctx := t.Context()
	job := jobstest.Job("limited", "@every 1s")
	job.MaxRuns = 5
	cfg := jobstest.Config(job)
	l, cli, clock := leaderOn(t, "/maxruns/", cfg, time.Date(2026, 11, 25, 19, 0, 0, 0, time.UTC))
	layout := l.d.Keys
	count := func() int {
		resp, err := cli.Get(ctx, layout.Scheduled("limited"))
		if err != nil || len(resp.Kvs) == 0 {
			return 0
		}
		n, _ := strconv.Atoi(string(resp.Kvs[0].Value))
		return n
	}
	passes := func(l *leader, n int) {
		for range n {
			if err := l.pass(ctx); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Second)
		}
	}
	startTerm(t, l, 0)
	l.jobs = nil // the term's first look: every job is planned at once
	l.syncJobs()
	passes(l, 2)
	queued := len(stored(t, cli, layout.JobQueue("limited")))
	if queued == 0 || count() != queued {
		t.Fatalf("%d entries queued, count %d: the count must move with them", queued, count())
	}

	// A pause withdraws the runs not yet due: the count gives them back.
	setPaused(l, "limited", true)
	l.syncPaused()
	passes(l, 1)
	if left := len(stored(t, cli, layout.JobQueue("limited"))); count() != left {
		t.Errorf("after the pause: %d entries, count %d", left, count())
	}
	setPaused(l, "limited", false)
	l.syncPaused()

	// A new term goes on from the stored count, up to max_runs.
	if _, err := cli.Delete(ctx, layout.Election()+"test"); err != nil { // the old term ends
		t.Fatal(err)
	}
	next := newTestLeader(t, cli, "/maxruns/", cfg, clock)
	if err := next.ticks.loadCursors(ctx); err != nil {
		t.Fatal(err)
	}
	next.jobs = nil
	next.syncJobs()
	passes(next, 12)
	if got := count(); got != 5 {
		t.Errorf("count after 12 more seconds: %d, want max_runs 5", got)
	}
	// No worker runs them here: every run counted is still queued.
	if got := len(stored(t, cli, layout.JobQueue("limited"))); got != 5 {
		t.Errorf("%d entries queued, want max_runs 5", got)
	}
	c, _ := next.cursors.get("limited")
	if c.Before(clock.Now().Add(-2 * time.Second)) {
		t.Errorf("cursor %s, want it following the clock (%s) once the runs are used up", c, clock.Now())
	}
}
