package jobs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A leader handoff in the middle of long runs, by resign and by crash: runs
// on surviving replicas keep their slots and finish, the concurrency limit
// holds throughout, and every tick is accounted for: it ran, or a record
// says why not (skipped, missed per catch_up, lost with its holder).
func TestLeaderHandoffDuringLongRuns(t *testing.T) {
	for _, mode := range []string{"resign", "crash"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			etcd := startEtcd(t)
			w := startWitness(t)
			long := httpJob("long", "@every 1s", w.url("sleep=2500ms"))
			long.MaxConcurrency = 2
			all := httpJob("catchall", "@every 1s", w.url(""))
			all.CatchUp = config.CatchUpAll
			none := httpJob("catchnone", "@every 1s", w.url(""))
			none.CatchUp = config.CatchUpNone
			cfg := newConfig(long, all, none)
			// A short lookahead, so the leader gap is longer than the ticks
			// the old leader had already queued and catch_up has work.
			tm := timing{Lookahead: 100 * time.Millisecond}
			nodes := etcd.nodesWith(cfg, tm, "a", "b", "c")
			old := leaderOf(t, nodes)
			poll.For(t, 60*time.Second, "long runs under way", func() bool { return len(w.finished("long")) >= 3 })

			handoffAt := time.Now()
			if mode == "resign" {
				old.stop(10 * time.Second) // resigns first, then drains its runs
			} else {
				old.crash()
			}
			rest := except(nodes, old)
			next := leaderOf(t, rest)
			gap := time.Since(handoffAt)
			t.Logf("%s: new leader %s after %s", mode, next.id, gap.Round(time.Millisecond))
			if mode == "resign" && gap > 2*time.Second {
				t.Errorf("resign handoff took %s", gap)
			}
			after := len(w.finished("catchall"))
			poll.For(t, 60*time.Second, "runs after the handoff", func() bool {
				return len(w.finished("catchall")) >= after+5 && len(w.finished("catchnone")) >= 8
			})
			// Let runs that straddled the handoff finish and be recorded.
			poll.For(t, 30*time.Second, "in-flight runs recorded", func() bool {
				return len(rest[0].engine.Pending()) <= 4
			})

			if got := w.maxConcurrent("long"); got > 2 {
				t.Errorf("the target saw %d long runs at once, max_concurrency is 2", got)
			}
			for _, job := range []string{"long", "catchall", "catchnone"} {
				checkAccounted(t, w, rest[0], job, handoffAt)
			}
			// catch_up none: ticks that came due while no one led are
			// recorded missed; catch_up all: none are.
			if mode == "crash" {
				missedAll := 0
				for _, r := range records(t, rest[0].client, "catchall") {
					if r.Outcome == runs.Missed {
						missedAll++
					}
				}
				if missedAll != 0 {
					t.Errorf("catch_up all: %d ticks recorded missed", missedAll)
				}
			}
			// Runs held by surviving replicas at the handoff kept their slots.
			for _, h := range w.finished("long") {
				if h.Holder != old.id && h.Start.Before(handoffAt) && h.End.After(handoffAt) {
					r, ok := records(t, rest[0].client, "long")[h.RunID]
					if !ok || r.Outcome != runs.Succeeded {
						t.Errorf("%s straddled the handoff on %s and ended %q", h.RunID, h.Holder, r.Outcome)
					}
				}
			}
		})
	}
}

// checkAccounted: every tick of job from its first observed one until a
// few seconds ago ran, or has a record saying why it did not. Runs still in
// flight (a caught-up run starts late) get time to finish; a tick that is
// never run nor recorded fails.
func checkAccounted(t *testing.T, w *witness, n *node, job string, around time.Time) {
	t.Helper()
	hits := w.finished(job)
	if len(hits) == 0 {
		t.Fatalf("%s never ran", job)
	}
	first := hits[0].Scheduled
	last := time.Now().Add(-4 * time.Second).Truncate(time.Second)
	var unaccounted []string
	var outcomes map[runs.Outcome]int
	settled := func() (bool, string) {
		ran := map[string]bool{}
		for _, h := range w.finished(job) {
			ran[h.RunID] = true
		}
		recs := records(t, n.client, job)
		unaccounted, outcomes = nil, map[runs.Outcome]int{}
		for at := first; !at.After(last); at = at.Add(time.Second) {
			id := runs.ID(job, at)
			r, recorded := recs[id]
			if recorded {
				outcomes[r.Outcome]++
			}
			if !ran[id] && !recorded {
				unaccounted = append(unaccounted, at.Format(time.TimeOnly))
			}
		}
		return len(unaccounted) == 0, fmt.Sprint(unaccounted)
	}
	poll.Until(t, 20*time.Second, fmt.Sprintf("%s: every tick run or recorded (handoff at %s)", job, around.Format(time.TimeOnly)), settled)
	t.Logf("%s: %s", job, fmt.Sprint(outcomes))
}
