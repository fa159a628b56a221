package jobs_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// worker.max_parallel bounds what one replica executes at once, across
// jobs; runs beyond it wait for a free worker instead of failing.
func TestMaxParallelBoundsOneReplica(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	var names []string
	far := jobstest.FarTick(time.Now())
	cfg := newConfig()
	for _, name := range []string{"p1", "p2", "p3", "p4", "p5", "p6"} {
		cfg.Jobs = append(cfg.Jobs, jobstest.WithDefaults(httpJob(name, far, w.url("sleep=1s"))))
		names = append(names, name)
	}
	cfg.Worker.MaxParallel = 2
	n := etcd.leading("solo", cfg)
	var ids []string
	for _, j := range names {
		id := n.trigger(t, j, "")
		ids = append(ids, id)
	}
	poll.For(t, 60*time.Second, "all six runs", func() bool {
		total := 0
		for _, j := range names {
			total += len(w.finished(j))
		}
		return total == 6
	})
	// Overlap across jobs, as the witness saw it.
	var all []hit
	for _, j := range names {
		all = append(all, w.finished(j)...)
	}
	peak := 0
	for _, a := range all {
		at := 0
		for _, b := range all {
			if !b.Start.After(a.Start) && b.End.After(a.Start) {
				at++
			}
		}
		peak = max(peak, at)
	}
	if peak > 2 {
		t.Errorf("%d runs at once on one replica, max_parallel is 2", peak)
	}
	if peak < 2 {
		t.Errorf("never two runs at once: max_parallel 2 not used")
	}
	// Records are written at release, after the target answered.
	for i, j := range names {
		var r runs.Record
		poll.For(t, 30*time.Second, ids[i]+" recorded", func() bool {
			var ok bool
			r, ok = records(t, n.client, j)[ids[i]]
			return ok
		})
		if r.Outcome != runs.Succeeded {
			t.Errorf("%s: %s %s", ids[i], r.Outcome, r.Error)
		}
	}
}

// A failing target is retried with backoff, keeping the run id, and the
// final record lists the failed attempt.
func TestFailedRunIsRetried(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	job := httpJob("flaky", jobstest.FarTick(time.Now()), w.url("status=500"))
	job.Retries.Max = 1
	cfg := newConfig(job)
	n := etcd.leading("solo", cfg)
	id := n.trigger(t, "flaky", "")
	// Both attempts fail (the target always answers 500): two requests,
	// attempts 1 and 2, then a failed record with the first attempt in it.
	var final runs.Record
	poll.Until(t, 60*time.Second, "the final record", func() (bool, string) {
		r, ok := records(t, n.client, "flaky")[id]
		final = r
		return ok && r.Attempt == 2, fmt.Sprintf("record %v: attempt %d %s %q; target saw %d requests", ok, r.Attempt, r.Outcome, r.Error, len(w.finished("flaky")))
	})
	hits := w.finished("flaky")
	if len(hits) != 2 || hits[0].Attempt != 1 || hits[1].Attempt != 2 || hits[0].RunID != id || hits[1].RunID != id {
		t.Fatalf("target saw %+v", hits)
	}
	if gap := hits[1].Start.Sub(hits[0].End); gap < 100*time.Millisecond {
		t.Errorf("retry came %s after the failure, backoff is 100ms", gap)
	}
	if final.Outcome != runs.Failed || final.HTTPStatus != 500 || final.Trigger != runs.Retry {
		t.Errorf("final record: %s %d %s", final.Outcome, final.HTTPStatus, final.Trigger)
	}
	if len(final.Previous) != 1 || final.Previous[0].Outcome != runs.Failed || !strings.Contains(final.Previous[0].Error, "500") {
		t.Errorf("earlier attempts: %+v", final.Previous)
	}
}

// A run that takes a shared resource tells its target which resource slot
// it holds; the fencing token covers it, since one transaction created
// both slots.
func TestResourceSlotReachesTarget(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	job := httpJob("res", jobstest.FarTick(time.Now()), w.url(""))
	job.Resources = []string{"shared"}
	n := etcd.leading("solo", newConfig(job))
	n.trigger(t, "res", "")
	poll.For(t, 30*time.Second, "the run", func() bool { return len(w.finished("res")) == 1 })
	h := w.finished("res")[0]
	if h.ResourceSlots != "shared/0" && h.ResourceSlots != "shared/1" {
		t.Errorf("X-Scheduler-Resource-Slots = %q, want shared/<0 or 1>", h.ResourceSlots)
	}
	if h.Token == 0 {
		t.Error("no fencing token")
	}
}
