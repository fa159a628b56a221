package jobs_test

import (
	"slices"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/poll"
)

// Every tick of an @every 1s job runs exactly once across three engines:
// the target counts run ids; none twice, no gap.
func TestEveryTickRunsExactlyOnce(t *testing.T) {
	t.Parallel()
	etcd := startEtcd(t)
	w := startWitness(t)
	cfg := newConfig(httpJob("tick", "@every 1s", w.url("")))
	nodes := etcd.nodes(cfg, "a", "b", "c")
	leaderOf(t, nodes)
	const want = 30
	poll.For(t, 90*time.Second, "30 runs", func() bool { return len(w.finished("tick")) >= want })

	hits := w.finished("tick")
	seen := map[string]int{}
	holders := map[string]int{}
	for _, h := range hits {
		seen[h.RunID]++
		holders[h.Holder]++
		if h.Attempt != 1 {
			t.Errorf("%s: attempt %d", h.RunID, h.Attempt)
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s ran %d times", id, n)
		}
	}
	first, last := hits[0].Scheduled, hits[len(hits)-1].Scheduled
	for at := first; !at.After(last); at = at.Add(time.Second) {
		if seen["tick@"+at.UTC().Format("2006-01-02T15:04:05Z07:00")] == 0 {
			t.Errorf("tick %s never ran", at.UTC().Format(time.RFC3339))
		}
	}
	var lateness []time.Duration
	for _, h := range hits {
		lateness = append(lateness, h.Start.Sub(h.Scheduled))
	}
	slices.Sort(lateness)
	t.Logf("%d runs from %s to %s; by holder: %v; start lateness p50 %s, max %s (a figure, not a test: see test/bench)",
		len(hits), first.Format(time.TimeOnly), last.Format(time.TimeOnly), holders, lateness[len(lateness)/2], lateness[len(lateness)-1])
	if len(holders) < 2 {
		t.Errorf("runs were not spread over the engines: %v", holders)
	}
}
