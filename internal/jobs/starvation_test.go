package jobs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// One replica with worker.max_parallel 2; job "slow" (overlap: queue)
// always has a run executing for 3s and runs waiting for its one slot; job
// "tick" fires every 250ms. Waiting holds no worker, so tick's runs start
// while slow's run executes: one worker is slow's, the other is free. When
// a waiting run held a worker, both were slow's (one executing, one
// waiting) and tick's runs could start only in the moment between two of
// slow's runs; its ticks piled up, late, and were skipped or missed.
//
// The test counts where tick's runs started, not how late: on a starved
// machine a start can be seconds late with the rule intact, but it still
// starts while slow executes.
func TestWaitingRunHoldsNoWorker(t *testing.T) {
	etcd := etcdtest.Start(t)
	w := startWitness(t)
	slow := jobstest.HTTPJob("slow", "@every 500ms", w.url("sleep=3s"))
	slow.Overlap = config.OverlapQueue
	slow.QueueLimit = 3
	tick := jobstest.HTTPJob("tick", "@every 250ms", w.url(""))
	cfg := jobstest.Config(slow, tick)
	cfg.Worker.MaxParallel = 2
	n := startNode(t, etcd.Endpoints(), "a", cfg)
	leaderOf(t, []*node{n})

	// Once slow has queued runs waiting, look at the next 20 ticks.
	poll.For(t, 30*time.Second, "slow runs waiting", func() bool {
		resp, err := etcd.Client().Get(context.Background(), keys.New(testPrefix).Queue()+"slow/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count >= 4 // one running, the rest due or coming due
	})
	from := time.Now()
	var ticks []hit
	poll.Until(t, 60*time.Second, "20 ticks", func() (bool, string) {
		ticks = ticks[:0]
		for _, h := range w.finished("tick") {
			if h.Scheduled.After(from) {
				ticks = append(ticks, h)
			}
		}
		return len(ticks) >= 20, fmt.Sprintf("%d ran", len(ticks))
	})
	last := ticks[0].Start
	for _, h := range ticks {
		if h.Start.After(last) {
			last = h.Start
		}
	}
	var slows []hit
	poll.For(t, 30*time.Second, "slow's runs up to the last tick finished", func() bool {
		slows = w.finished("slow")
		for _, s := range slows {
			if s.End.After(last) {
				return true
			}
		}
		return false
	})
	// A tick run started "beside" slow when it was due while a run of
	// slow had been executing for 300ms and it started before that run
	// ended: then slow's next run was waiting, and a worker was free all
	// the same. With a waiting run holding the other worker, a tick due in
	// one of slow's runs starts only after that run ends.
	beside := 0
	var late []string
	for _, h := range ticks {
		for _, s := range slows {
			if h.Scheduled.After(s.Start.Add(300*time.Millisecond)) && h.Start.Before(s.End) {
				beside++
				break
			}
		}
		if d := h.Start.Sub(h.Scheduled); d > 200*time.Millisecond {
			late = append(late, fmt.Sprintf("%s %s late", h.RunID, d.Round(time.Millisecond)))
		}
	}
	t.Logf("%d of %d tick runs due and started beside one run of slow; late over 200ms: %v", beside, len(ticks), late)
	if beside < len(ticks)/2 {
		t.Errorf("only %d of %d tick runs started while slow executed: a waiting run of slow held the other worker", beside, len(ticks))
	}
	for _, r := range records(t, etcd.Client(), "tick") {
		if r.ScheduledAt.After(from) && r.Outcome == runs.Missed {
			t.Errorf("%s: %s (%s)", r.RunID, r.Outcome, r.Error)
		}
	}
}
