package jobs_test

import (
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/poll"
)

// The leader ticks a job's union of schedules after its exclusions: runs
// happen at ticks of the union only, never in an excluded second, every
// tick from the first run to the last runs once, and the job's status
// shows the next tick after exclusions.
func TestLeaderTicksTheUnion(t *testing.T) {
	t.Parallel()
	etcd := startEtcd(t)
	w := startWitness(t)
	job := httpJob("union", "", w.url(""))
	job.Schedules = []string{"@every 1s", "@every 1500ms"}
	// Even seconds are excluded: of @every 1500ms, x.5 survives only
	// after an odd second.
	job.Exclude = []config.Exclude{{Cron: "*/2 * * * * *"}}
	job.MaxConcurrency = 10
	cfg := newConfig(job)
	n := etcd.node("a", cfg)
	sched, err := cfg.Jobs[0].ParsedSchedule()
	if err != nil {
		t.Fatal(err)
	}

	st, err := n.engine.Job(t.Context(), "union")
	if err != nil {
		t.Fatal(err)
	}
	if next := st.NextRun; next.IsZero() || next.Second()%2 == 0 || !sched.Next(next.Add(-time.Millisecond)).Equal(next) {
		t.Errorf("next_run %s is not a tick of the union after exclusions", next)
	}

	poll.For(t, 60*time.Second, "8 runs", func() bool { return len(w.finished("union")) >= 8 })
	hits := w.finished("union")
	ran := map[time.Time]bool{}
	first, last := hits[0].Scheduled, hits[0].Scheduled
	for _, h := range hits {
		at := h.Scheduled
		switch {
		case ran[at]:
			t.Errorf("tick %s ran twice", at)
		case at.Second()%2 == 0:
			t.Errorf("tick %s ran in an excluded second", at)
		case !sched.Next(at.Add(-time.Millisecond)).Equal(at):
			t.Errorf("run at %s is not a tick of the union", at)
		}
		ran[at] = true
		if at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	for at := first; at.Before(last); {
		at = sched.Next(at)
		if !ran[at] {
			t.Errorf("tick %s between the first run (%s) and the last (%s) did not run", at, first, last)
		}
	}
}
