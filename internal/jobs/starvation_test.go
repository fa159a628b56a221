package jobs_test

import (
	"context"
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
// always has a run executing and runs waiting for its one slot; job "tick"
// fires every 250ms. Waiting holds no worker, so every tick starts within
// its normal lateness and none is skipped or missed. When a waiting run
// held a worker, the two workers were both slow's and tick's runs waited
// behind them.
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
	poll.For(t, 30*time.Second, "20 ticks", func() bool {
		c := 0
		for _, h := range w.finished("tick") {
			if h.Scheduled.After(from) {
				c++
			}
		}
		return c >= 20
	})
	const normal = 200 * time.Millisecond
	for _, h := range w.finished("tick") {
		if h.Scheduled.After(from) && h.Start.Sub(h.Scheduled) > normal {
			t.Errorf("%s started %s late", h.RunID, h.Start.Sub(h.Scheduled).Round(time.Millisecond))
		}
	}
	for _, r := range records(t, etcd.Client(), "tick") {
		if r.ScheduledAt.After(from) && (r.Outcome == runs.Skipped || r.Outcome == runs.Missed) {
			t.Errorf("%s: %s (%s)", r.RunID, r.Outcome, r.Error)
		}
	}
}
