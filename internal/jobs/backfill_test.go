package jobs_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/backfill"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// backfillWhenScheduled backfills [from, to) on n once a leader has taken
// the job up (before, the backfill is refused: which ticks the schedule
// will run is not known yet). It may run in a goroutine of its own.
func backfillWhenScheduled(t *testing.T, n *node, job string, from, to time.Time) (res backfill.Result, err error) {
	poll.Within(30*time.Second, func() bool {
		res, err = n.engine.Backfill(t.Context(), job, from, to)
		return !errors.Is(err, backfill.ErrNotScheduled)
	})
	if err != nil {
		return res, fmt.Errorf("backfill %s [%s, %s): %w", job, from, to, err)
	}
	return res, nil
}

// Two backfills of overlapping past ranges, sent at once to two replicas
// while the schedule runs the job: every tick of the union runs or is
// recorded exactly once. The ticks before the job was first scheduled are
// queued by exactly one of the two; the ones the schedule authorized are
// left alone, and the witness sees each run id once per attempt.
func TestConcurrentBackfillsAndTheScheduleRunEachTickOnce(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	job := httpJob("tick", "@every 1s", w.url("sleep=50ms"))
	job.MaxConcurrency = 4
	born := time.Now().Truncate(time.Second)
	a := etcd.node("a", newConfig(job))
	b := etcd.node("b", newConfig(job))
	poll.For(t, 30*time.Second, "three scheduled runs", func() bool { return len(records(t, a.client, "tick")) >= 3 })

	now := time.Now()
	from1, to1 := born.Add(-20*time.Second), now.Add(-time.Second)
	from2, to2 := born.Add(-10*time.Second), now
	var wg sync.WaitGroup
	results := make([]backfill.Result, 2)
	errs := make([]error, 2)
	for i, n := range []*node{a, b} {
		from, to := from1, to1
		if i == 1 {
			from, to = from2, to2
		}
		wg.Go(func() { results[i], errs[i] = backfillWhenScheduled(t, n, "tick", from, to) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	queuedBy := map[string]int{}
	for _, r := range results {
		for _, id := range r.Queued {
			queuedBy[id]++
		}
	}
	for tick := from1; tick.Before(born.Add(-time.Second)); tick = tick.Add(time.Second) {
		if id := runs.ID("tick", tick); queuedBy[id] != 1 {
			t.Errorf("%s, before the job was scheduled, was queued by %d backfills; want 1", id, queuedBy[id])
		}
	}
	var union []string
	for tick := from1; tick.Before(to2); tick = tick.Add(time.Second) {
		union = append(union, runs.ID("tick", tick))
	}
	poll.Until(t, 90*time.Second, "a record for every tick of the union", func() (bool, string) {
		recs := records(t, a.client, "tick")
		for _, id := range union {
			if _, ok := recs[id]; !ok {
				return false, fmt.Sprintf("no record of %s (%d records, %v)", id, len(recs), outcomes(recs))
			}
		}
		return true, ""
	})
	recs := records(t, a.client, "tick")
	for id, n := range queuedBy {
		if n > 1 {
			t.Errorf("%s queued by %d backfills", id, n)
		}
		if r := recs[id]; r.Trigger != runs.Backfill && r.Trigger != runs.Retry {
			t.Errorf("%s was queued by a backfill but recorded with trigger %q", id, r.Trigger)
		}
	}
	seen := map[string]int{}
	for _, h := range w.finished("tick") {
		key := fmt.Sprintf("%s attempt %d", h.RunID, h.Attempt)
		if seen[key]++; seen[key] > 1 {
			t.Errorf("%s reached the target %d times", key, seen[key])
		}
	}
}

// A backfilled run of a job with overlap skip, one slot and a starting
// deadline of 1s waits for the slot instead of being skipped, and is not
// recorded missed although its tick is long past its deadline.
func TestBackfilledRunsWaitForTheSlotPastTheirStartingDeadline(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	job := httpJob("yearly", "0 0 1 1 *", w.url("sleep=300ms"))
	job.Overlap = config.OverlapSkip
	job.MaxConcurrency = 1
	job.StartingDeadline = config.Duration(time.Second)
	n := etcd.node("solo", newConfig(job))

	from := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	res, err := backfillWhenScheduled(t, n, "yearly", from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Queued) != 4 {
		t.Fatalf("queued %v; want the 4 new years 2023 to 2026", res.Queued)
	}
	poll.Until(t, 60*time.Second, "a record of each backfilled run", func() (bool, string) {
		recs := records(t, n.client, "yearly")
		return len(recs) == 4, fmt.Sprintf("%d records: %v", len(recs), outcomes(recs))
	})
	for id, r := range records(t, n.client, "yearly") {
		if r.Outcome != runs.Succeeded || r.Trigger != runs.Backfill {
			t.Errorf("%s: %s with trigger %s (%s); want succeeded, backfill", id, r.Outcome, r.Trigger, r.Error)
		}
	}
	if m := w.maxConcurrent("yearly"); m != 1 {
		t.Errorf("%d backfilled runs ran at once; max_concurrency is 1", m)
	}
}
