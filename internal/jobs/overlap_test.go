package jobs_test

import (
	"strings"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// max_concurrency 2, runs lasting three ticks: whatever the policy the
// target never sees more than two at once, and the records say what the
// policy did with the ticks that found both slots taken.
func TestOverlapPolicies(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	job := func(name, overlap string) config.Job {
		j := httpJob(name, "@every 1s", w.url("sleep=3s"))
		j.MaxConcurrency = 2
		j.Overlap = overlap
		j.QueueLimit = 1
		return j
	}
	cfg := newConfig(job("skip", "skip"), job("queue", "queue"), job("replace", "replace"))
	a := etcd.node("a", cfg)
	b := etcd.node("b", cfg)
	leaderOf(t, []*node{a, b})

	byOutcome := func(job string) map[runs.Outcome][]runs.Record {
		out := map[runs.Outcome][]runs.Record{}
		for _, r := range records(t, a.client, job) {
			out[r.Outcome] = append(out[r.Outcome], r)
		}
		return out
	}
	poll.For(t, 90*time.Second, "each policy to act", func() bool {
		return len(byOutcome("skip")[runs.Skipped]) >= 3 && len(byOutcome("skip")[runs.Succeeded]) >= 3 &&
			len(byOutcome("queue")[runs.Skipped]) >= 2 && len(byOutcome("queue")[runs.Succeeded]) >= 4 &&
			len(byOutcome("replace")[runs.Cancelled]) >= 3
	})

	for _, job := range []string{"skip", "queue", "replace"} {
		if got := w.maxConcurrent(job); got > 2 {
			t.Errorf("%s: the target saw %d runs at once, max_concurrency is 2", job, got)
		}
	}
	for _, r := range byOutcome("skip")[runs.Skipped] {
		if !strings.Contains(r.Error, "overlap: skip") {
			t.Errorf("skip: skipped record says %q", r.Error)
		}
	}
	// queue: a run that waited for a slot started a whole tick or more
	// after it was due; ticks beyond queue_limit were skipped.
	queued := 0
	for _, r := range byOutcome("queue")[runs.Succeeded] {
		if r.StartedAt.Sub(r.ScheduledAt) >= 900*time.Millisecond {
			queued++
		}
	}
	if queued == 0 {
		t.Error("queue: no run waited for a slot")
	}
	for _, r := range byOutcome("queue")[runs.Skipped] {
		if !strings.Contains(r.Error, "queue_limit 1") {
			t.Errorf("queue: skipped record says %q", r.Error)
		}
	}
	// replace: the oldest run was cancelled to make room, and says so; it
	// had started (a run replaced before it started would be a skip).
	for _, r := range byOutcome("replace")[runs.Cancelled] {
		if !strings.Contains(r.Error, "replaced by replace@") {
			t.Errorf("replace: cancelled record says %q", r.Error)
		}
		if r.StartedAt.IsZero() || r.FencingToken == 0 {
			t.Errorf("replace: %s was cancelled without having held a slot: %+v", r.RunID, r)
		}
	}
	if n := len(byOutcome("replace")[runs.Skipped]); n != 0 {
		t.Errorf("replace: %d ticks skipped", n)
	}
	t.Logf("skip: %d ran, %d skipped; queue: %d ran (%d after waiting), %d skipped; replace: %d cancelled",
		len(byOutcome("skip")[runs.Succeeded]), len(byOutcome("skip")[runs.Skipped]),
		len(byOutcome("queue")[runs.Succeeded]), queued, len(byOutcome("queue")[runs.Skipped]),
		len(byOutcome("replace")[runs.Cancelled]))
}
