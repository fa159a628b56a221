package jobs_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// firstAttemptFails is a target whose first attempts fail; every attempt
// fails while always is set.
func firstAttemptFails(t *testing.T, always *atomic.Bool) string {
	return failingTarget(t, func(r *http.Request) bool {
		return always.Load() || r.Header.Get("X-Scheduler-Attempt") == "1"
	})
}

// pause_on_failure (docs/configuration.md#jobs): a failed attempt that is retried
// does not pause the job; the run's last attempt failing does, in the
// transaction of its record, with the reason naming the run, and notifies
// the sinks that ask for "paused" once.
func TestPauseOnFailurePausesOnlyWhenTheLastAttemptFails(t *testing.T) {
	etcd := startEtcd(t)
	rcv := startReceiver(t, http.StatusOK)
	var always atomic.Bool
	job := httpJob("fragile", "@every 1s", firstAttemptFails(t, &always))
	job.PauseOnFailure = true
	job.Retries.Max = 1
	cfg := newConfig(job)
	rcv.notifies(cfg, config.Paused)
	n := etcd.node("solo", cfg)

	poll.For(t, 30*time.Second, "three runs that succeeded at their retry", func() bool {
		return len(finalRecords(t, n.client, "fragile", runs.Succeeded)) >= 3
	})
	if st, err := n.engine.Job(t.Context(), "fragile"); err != nil || st.Paused {
		t.Fatalf("paused after failed attempts that were retried: %+v, %v", st, err)
	}

	always.Store(true)
	poll.For(t, 30*time.Second, "the job paused by a failed run", func() bool {
		st, err := n.engine.Job(t.Context(), "fragile")
		return err == nil && st.Paused
	})
	st, _ := n.engine.Job(t.Context(), "fragile")
	failed := finalRecords(t, n.client, "fragile", runs.Failed)
	if len(failed) == 0 {
		t.Fatal("paused, but no run recorded failed")
	}
	want := "paused after run " + failed[0].RunID + " failed"
	if len(failed) > 1 {
		want = "paused after run " // runs already claimed may end failed too
	}
	if !strings.HasPrefix(st.PauseReason, want) || !strings.HasSuffix(st.PauseReason, " failed") {
		t.Errorf("pause reason %q, want %q", st.PauseReason, want)
	}
	poll.For(t, 30*time.Second, "the paused notification delivered", func() bool {
		for _, d := range rcv.deliveries(true) {
			if d.Event == config.Paused {
				return true
			}
		}
		return false
	})
	for _, d := range rcv.deliveries(true) {
		if d.Event == config.Paused && (d.Record.Outcome != runs.Failed || d.Record.Attempt != 2) {
			t.Errorf("paused notification with record %s attempt %d %s, want the failed last attempt", d.Record.RunID, d.Record.Attempt, d.Record.Outcome)
		}
	}
}
