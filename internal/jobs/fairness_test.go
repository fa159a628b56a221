package jobs_test

import (
	"slices"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Two jobs on identical schedules share a resource of limit 1 that has
// room for about half of their runs, on two replicas. Of 60 runs offered
// each, their admitted counts differ by at most 10%: among waiting runs
// the one due first goes first, and ties are broken by a hash, not a name.
// The admissions come in due order.
func TestSharedResourceIsFair(t *testing.T) {
	t.Parallel()
	etcd := startEtcd(t)
	w := startWitness(t)
	job := func(name string) config.Job {
		j := httpJob(name, "@every 250ms", w.url("sleep=200ms"))
		j.Resources = []string{"one"}
		j.Overlap = config.OverlapQueue
		j.QueueLimit = 1
		return j
	}
	cfg := func() *config.Config {
		c := newConfig(job("fa"), job("fb"))
		c.Resources = []config.Resource{{Name: "one", Limit: 1}}
		return c
	}
	a := etcd.node("a", cfg())
	b := etcd.node("b", cfg())
	leaderOf(t, []*node{a, b})

	// 60 ticks each, from a whole second on.
	from := time.Now().Truncate(time.Second).Add(2 * time.Second)
	to := from.Add(60 * 250 * time.Millisecond)
	offered := func(r runs.Record) bool { return !r.ScheduledAt.Before(from) && r.ScheduledAt.Before(to) }
	count := func(job string) (ended, admitted int) {
		for _, r := range records(t, etcd.Client(), job) {
			if offered(r) {
				ended++
				if r.Outcome == runs.Succeeded {
					admitted++
				}
			}
		}
		return ended, admitted
	}
	poll.For(t, 60*time.Second, "every offered run to end", func() bool {
		ea, _ := count("fa")
		eb, _ := count("fb")
		return ea == 60 && eb == 60
	})
	_, na := count("fa")
	_, nb := count("fb")
	t.Logf("of 60 runs offered each: fa %d admitted, fb %d", na, nb)
	// The order itself: no admitted run started after one due later than
	// it (runs due together may go either way).
	hits := append(w.finished("fa"), w.finished("fb")...)
	slices.SortFunc(hits, func(x, y hit) int { return x.Start.Compare(y.Start) })
	inversions := 0
	for i := 1; i < len(hits); i++ {
		if hits[i].Scheduled.Before(hits[i-1].Scheduled) {
			inversions++
			t.Logf("%s (due %s) started after %s (due %s)", hits[i].RunID, hits[i].Scheduled.Format("05.000"), hits[i-1].RunID, hits[i-1].Scheduled.Format("05.000"))
		}
	}
	if inversions > 0 {
		t.Errorf("%d runs were admitted after a run due later", inversions)
	}
	// Unfair admission gave 26 and 12 (the one waiting always lost to
	// the next tick); fair takes turns, within what a starved machine
	// shifts (32 and 36 were seen under a full -race suite on two cores).
	if lo, hi := min(na, nb), max(na, nb); lo*4 < hi*3 {
		t.Errorf("fa %d, fb %d: the fewer is under three quarters of the more", na, nb)
	}
	if t.Failed() {
		ra, rb := records(t, etcd.Client(), "fa"), records(t, etcd.Client(), "fb")
		for at := from; at.Before(to); at = at.Add(250 * time.Millisecond) {
			x, y := ra[runs.ID("fa", at)], rb[runs.ID("fb", at)]
			t.Logf("%s fa %s %s %q | fb %s %s %q", at.Format("05.000"), x.Outcome, x.StartedAt.Format("05.000"), x.Error, y.Outcome, y.StartedAt.Format("05.000"), y.Error)
		}
	}
	if na+nb < 30 {
		t.Errorf("only %d runs admitted in all", na+nb)
	}
}

// Fairness is bounded: an elder stuck behind a limit the younger run does
// not need (its own job's slot, held by a long run) delays the younger run
// on the resource they share by at most the fair wait (2s), even when
// nothing else changes meanwhile.
func TestFairWaitIsBounded(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	stuck := httpJob("stuck", "@manually", w.url("sleep=20s"))
	stuck.Resources = []string{"r"}
	stuck.Overlap = config.OverlapQueue
	stuck.QueueLimit = 2
	other := httpJob("other", "@manually", w.url(""))
	other.Resources = []string{"r"}
	other.Overlap = config.OverlapQueue
	cfg := newConfig(stuck, other)
	cfg.Resources = []config.Resource{{Name: "r", Limit: 2}}
	n := etcd.leading("a", cfg)
	n.trigger(t, "stuck", "")
	poll.For(t, 10*time.Second, "the first stuck run to hold its slot", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.inFlight["stuck"] == 1
	})
	n.trigger(t, "stuck", "") // the elder: waits for stuck's slot
	triggered := time.Now()
	n.trigger(t, "other", "")
	poll.For(t, 10*time.Second, "the other job's run", func() bool { return len(w.finished("other")) == 1 })
	if d := w.finished("other")[0].Start.Sub(triggered); d > 3*time.Second {
		t.Errorf("the other job's run started %s after its trigger: fairness cost liveness", d)
	} else {
		t.Logf("started %s after its trigger, behind an elder stuck for 20s", d.Round(time.Millisecond))
	}
}
