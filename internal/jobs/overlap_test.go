package jobs_test

import (
	"sort"
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
	t.Parallel()
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

	for _, job := range []string{"skip", "queue"} {
		if got := w.maxConcurrent(job); got > 2 {
			t.Errorf("%s: the target saw %d runs at once, max_concurrency is 2", job, got)
		}
	}
	// replace: a replaced request ends at the target when its handler
	// notices the closed connection, which on a loaded machine can come
	// after the replacing run arrived. What the scheduler promises is that
	// it started no run while two held a slot: the records' spans, taken
	// on one clock, say that.
	if got := maxAtOnce(records(t, a.client, "replace")); got != 2 {
		t.Errorf("replace: at most %d runs held a slot at once, want max_concurrency 2", got)
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

// maxAtOnce is the most runs whose recorded spans (started to ended)
// overlap at one instant.
func maxAtOnce(recs map[string]runs.Record) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, r := range recs {
		if !r.StartedAt.IsZero() && !r.EndedAt.IsZero() {
			edges = append(edges, edge{r.StartedAt, 1}, edge{r.EndedAt, -1})
		}
	}
	// An end sorts before a start at the same instant: a slot freed and
	// taken in one step is not two runs at once.
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].delta < edges[j].delta
	})
	most, now := 0, 0
	for _, e := range edges {
		now += e.delta
		most = max(most, now)
	}
	return most
}
