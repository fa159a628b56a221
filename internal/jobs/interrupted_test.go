package jobs_test

import (
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A graceful restart loses no work (docs/design-run-end.md#a-graceful-shutdown-requeues-what-it-cuts): a run still going
// when its replica's shutdown grace ends is recorded interrupted and
// queued again at once, as its next attempt, for another replica, without
// using a retry (retries.max is 0 here); on_shutdown: cancel keeps the old
// behaviour (cancelled, for good); worker.max_interruptions 0 records the
// first interruption for good.
func TestGracefulShutdownRequeuesTheRunsItCuts(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	job := func(name, onShutdown string) config.Job {
		j := httpJob(name, "@manually", w.url("sleep=3s"))
		j.OnShutdown = onShutdown
		return j
	}
	cases := []struct {
		name             string
		onShutdown       string
		maxInterruptions int
		want             []runs.Outcome // the outcome of each attempt, in order
	}{
		{"requeued", "", 3, []runs.Outcome{runs.Interrupted, runs.Succeeded}},
		{"on-shutdown-cancel", config.OnShutdownCancel, 3, []runs.Outcome{runs.Cancelled}},
		{"no-interruptions-left", "", 0, []runs.Outcome{runs.Interrupted}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := newConfig(job(tc.name, tc.onShutdown))
			cfg.Worker.MaxInterruptions = tc.maxInterruptions
			nodes := []*node{startNode(t, etcd.Endpoints(), tc.name+"-a", cfg), startNode(t, etcd.Endpoints(), tc.name+"-b", cfg)}
			t.Cleanup(func() {
				for _, n := range nodes {
					n.stop(5 * time.Second)
				}
			})
			leaderOf(t, nodes)
			id := nodes[0].trigger(t, tc.name, "")
			var holder string
			poll.For(t, 30*time.Second, "the run to reach the target", func() bool {
				holder = w.holderOf(id)
				return holder != ""
			})
			for _, n := range nodes {
				if n.id == holder {
					n.stop(300 * time.Millisecond) // grace ends while the run has 2.7s to go
				}
			}
			rec := awaitRecord(t, etcd.Client(), tc.name, id, func(r runs.Record) bool {
				return len(r.Previous)+1 == len(tc.want) && r.Outcome == tc.want[len(tc.want)-1]
			})
			for i, a := range rec.Previous {
				if a.Outcome != tc.want[i] || a.Holder != holder {
					t.Errorf("attempt %d: %s on %s, want %s on %s (%s)", a.Attempt, a.Outcome, a.Holder, tc.want[i], holder, a.Error)
				}
			}
			if len(rec.Previous) > 0 && rec.Holder == holder {
				t.Errorf("attempt %d ran on %s again, the replica that shut down", rec.Attempt, holder)
			}
			t.Logf("%s: attempt %d %s on %s (%s); before it %+v", id, rec.Attempt, rec.Outcome, rec.Holder, rec.Error, rec.Previous)
		})
	}
}
