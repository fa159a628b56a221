package leader

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A sharded job keeps the fan-in keys of its newest history_limit ticks
// that fanned in; older ones go with their worst registers, and a tick not
// fanned in yet keeps its keys however old it is.
func TestPruneFanInsKeepsTheNewestTicks(t *testing.T) {
	ctx := t.Context()
	j := jobstest.Job("sh", "@every 1s")
	j.Shards, j.HistoryLimit = 4, 3
	l, cli, _ := leaderOn(t, "/prunefan/", jobstest.Config(j), time.Time{})
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var ticks []string
	for i := range 6 {
		tick := runs.ID("sh", t0.Add(time.Duration(i)*time.Second))
		ticks = append(ticks, tick)
		value := "pending" // the oldest tick is still running
		if i > 0 {
			b, _ := json.Marshal(queue.TickRecord{RunID: tick, Job: "sh", Outcome: runs.Succeeded, Shards: 4})
			value = string(b)
		}
		if _, err := cli.Txn(ctx).Then(clientv3.OpPut(l.d.Keys.FanIn("sh", tick), value),
			clientv3.OpPut(l.d.Keys.FanInWorst("sh", tick), "0")).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.pruner.pruneFanIns(ctx, []string{"sh"}); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, l.d.Keys.JobFanIns("sh"), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range resp.Kvs {
		got = append(got, string(kv.Key))
	}
	var want []string
	for _, tick := range []string{ticks[0], ticks[3], ticks[4], ticks[5]} {
		want = append(want, l.d.Keys.FanIn("sh", tick), l.d.Keys.FanInWorst("sh", tick))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("fan-in keys left:\n%s\nwant the running tick's and the 3 newest fanned in:\n%s", fmt.Sprint(got), fmt.Sprint(want))
	}
}
