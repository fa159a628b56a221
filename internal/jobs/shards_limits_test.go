package jobs_test

import (
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// max_concurrency holds per shard index: the shards of one tick run at
// once (each index has its own slot), and while they run, a second
// tick's shards find their index's one slot taken and are skipped.
func TestShardMaxConcurrencyPerIndex(t *testing.T) {
	etcd := etcdtest.Start(t)
	w := startWitness(t)
	job := jobstest.HTTPJob("par", jobstest.FarTick(time.Now()), w.url("sleep=3s"))
	job.Shards = 3
	n := startNode(t, etcd.Endpoints(), "a", jobstest.Config(job))
	leaderOf(t, []*node{n})
	first := n.trigger(t, "par", "")
	poll.For(t, 30*time.Second, "the first tick's three shards running at once", func() bool { return w.maxConcurrent("par") == 3 })
	second := n.trigger(t, "par", "")
	poll.For(t, 30*time.Second, "both ticks fanned in", func() bool {
		a, _ := tickOf(t, n.client, "par", first)
		b, ok := tickOf(t, n.client, "par", second)
		return a.Outcome != "" && ok && b.Outcome != ""
	})
	view, err := n.engine.FindRun(t.Context(), second)
	if err != nil {
		t.Fatal(err)
	}
	if view.Outcome != runs.Skipped {
		t.Errorf("second tick, started while every index's slot was taken: %s, want skipped; shards %+v", view.Outcome, view.Shards)
	}
	if a, _ := tickOf(t, n.client, "par", first); a.Outcome != runs.Succeeded {
		t.Errorf("first tick: %s, want succeeded", a.Outcome)
	}
}

// A tick past its starting deadline whose fan-out an earlier leader began
// (its first part written, then it died): the next leader, which would
// record the tick missed, queues its missing shards instead; every shard
// is recorded missed by its deadline and the tick fans in once, missed.
func TestPartialTickPastItsDeadlineIsCompletedAndMissed(t *testing.T) {
	etcd := etcdtest.Start(t)
	st := startShardTarget(t)
	job := jobstest.HTTPJob("late", "@every 1h", st.srv.URL+"/run")
	job.Shards = queue.ShardPart + 6 // two parts
	job.CatchUp = config.CatchUpAll
	cfg := jobstest.Config(job)
	cfg.Cluster.Etcd.Prefix = testPrefix
	k := keys.New(testPrefix)
	cli := etcdtest.NewClient(t, etcd.Endpoints())

	at := time.Now().Add(-2 * time.Minute).Truncate(time.Hour) // past the 1m starting deadline
	tick := queue.NewEntry(runs.ID("late", at), cfg.Job("late"), cfg.Resources, at, at, 1, runs.Schedule)
	parts := queue.FanOutParts(k, tick.ShardEntries())
	if _, err := cli.Txn(t.Context()).Then(append(parts[0],
		clientv3.OpPut(k.Cursor("late"), queue.EncodeCursor(at.Add(-time.Hour))))...).Commit(); err != nil {
		t.Fatal(err)
	}

	n := startNode(t, etcd.Endpoints(), "a", cfg)
	leaderOf(t, []*node{n})
	done := awaitTick(t, cli, "late", tick.RunID, 60*time.Second)
	if done.Outcome != runs.Missed {
		t.Errorf("tick %s: %s, want missed", tick.RunID, done.Outcome)
	}
	recs := records(t, cli, "late")
	for i := range job.Shards {
		if r := recs[runs.ShardID(tick.RunID, i)]; r.Outcome != runs.Missed {
			t.Errorf("shard %d: %q, want missed", i, r.Outcome)
		}
	}
	if r, ok := recs[tick.RunID]; ok {
		t.Errorf("a record under the tick's own id (%s) beside its shards'", r.Outcome)
	}
	st.mu.Lock()
	for run := range st.count {
		// Only this tick's: the job's next tick is due on the hour, and a
		// test run then sees it run.
		if strings.HasPrefix(run, tick.RunID+"#") {
			t.Errorf("missed shard %s reached the target", run)
		}
	}
	st.mu.Unlock()
}
