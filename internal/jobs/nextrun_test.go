package jobs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs"
	"github.com/etcdsched/scheduler/internal/poll"
)

// A job whose max_runs are used up shows no next run, in the job's status
// and in the list, once its last materialized tick has run (issue 34,
// item 3): its schedule has stopped.
func TestNoNextRunOnceMaxRunsAreUsedUp(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	job := httpJob("three", "@every 1s", w.url("sleep=10ms"))
	job.MaxRuns = 3
	n := etcd.leading("solo", newConfig(job))
	poll.Until(t, 60*time.Second, "three runs recorded", func() (bool, string) {
		return len(records(t, n.client, "three")) == 3, fmt.Sprint(len(records(t, n.client, "three")), " records")
	})
	st, err := n.engine.Job(t.Context(), "three")
	if err != nil || st.RemainingRuns == nil || *st.RemainingRuns != 0 {
		t.Fatalf("job three: %+v, %v; want remaining_runs 0", st, err)
	}
	if !st.NextRun.IsZero() {
		t.Errorf("job three with no runs left: next_run %s, want none", st.NextRun)
	}
	list, _, err := n.engine.Jobs(t.Context(), jobs.Page{})
	if err != nil || len(list) != 1 {
		t.Fatalf("jobs: %+v, %v", list, err)
	}
	if !list[0].NextRun.IsZero() || list[0].RemainingRuns == nil || *list[0].RemainingRuns != 0 {
		t.Errorf("jobs lists three with next_run %s, remaining_runs %v; want none and 0", list[0].NextRun, list[0].RemainingRuns)
	}
}

// A job paused until a time shows as next run the first tick at or after
// it, not a tick inside the pause; a job paused without an until shows
// none (issue 34, item 3).
func TestNextRunOfAPausedJob(t *testing.T) {
	etcd := startEtcd(t)
	n := etcd.leading("solo", newConfig(idleJob("until", "@every 1m"), idleJob("forever", "@every 1m")))
	ctx := t.Context()
	until := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Minute)
	if _, err := n.engine.Pause(ctx, "until", jobs.PauseRequest{Until: until}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.engine.Pause(ctx, "forever", jobs.PauseRequest{Reason: "vendor outage"}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "both pauses seen", func() (bool, string) {
		a, errA := n.engine.Job(ctx, "until")
		b, errB := n.engine.Job(ctx, "forever")
		return errA == nil && errB == nil && a.Paused && b.Paused, fmt.Sprint(a.Paused, b.Paused, errA, errB)
	})
	a, _ := n.engine.Job(ctx, "until")
	if !a.NextRun.Equal(until) {
		t.Errorf("job paused until %s: next_run %s, want the tick at the until", until, a.NextRun)
	}
	b, _ := n.engine.Job(ctx, "forever")
	if !b.NextRun.IsZero() {
		t.Errorf("job paused without an until: next_run %s, want none", b.NextRun)
	}
}
