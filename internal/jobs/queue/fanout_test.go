package queue

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// cutShort is a trigger of a job of 200 shards whose fan-out stopped after
// its first two parts (128 shards), as when the trigger's etcd calls timed
// out between parts, and one of the written shards finally ended: its
// record, no entry, and the fan-in key put once more.
func cutShort(t *testing.T, cli *clientv3.Client, k keys.Layout) *Entry {
	t.Helper()
	job := config.Job{Name: "wide", Shards: 200, Schedule: "@manually", HTTP: &config.HTTP{URL: "http://127.0.0.1:1/"}}
	at := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	tick := NewEntry(runs.IdempotentID("wide", "once"), &job, nil, at, at, 1, runs.Manual)
	ctx := context.Background()
	for _, part := range FanOutParts(k, tick.ShardEntries())[:2] {
		if _, err := cli.Txn(ctx).Then(part...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	shard := runs.ShardID(tick.RunID, 5)
	if _, err := cli.Txn(ctx).Then(
		clientv3.OpDelete(k.Entry("wide", shard)),
		clientv3.OpPut(k.Record("wide", shard), "{}"),
		clientv3.OpPut(k.FanIn("wide", tick.RunID), FanInPending),
	).Commit(); err != nil {
		t.Fatal(err)
	}
	return tick
}

// count is how many keys there are under prefix.
func count(t *testing.T, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// A trigger tried again after its fan-out was cut short writes the shards
// that were never written, and only those: the tick fans in. Before, the
// retry found the tick and wrote nothing, and the tick never ended (a CI
// run of TestShardsOfAKilledProcessAreRetriedAndFannedInOnce lost the
// last part so).
func TestATriggerTriedAgainCompletesAFanOutCutShort(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/resume/")
	tick := cutShort(t, cli, k)
	created, err := AddShards(context.Background(), cli, k, tick)
	if err != nil || created {
		t.Fatalf("the retry: created %v, %v; want the tick found, not created", created, err)
	}
	queued, ended := count(t, cli, k.Entry("wide", tick.RunID+"#")), count(t, cli, k.Record("wide", tick.RunID+"#"))
	if queued != 199 || ended != 1 {
		t.Errorf("%d shards queued and %d ended; want 199 and the one that ended", queued, ended)
	}
}

// A tick whose ended shard's record is gone (pruned) is not completed:
// which shards were written is no longer known, and a shard written again
// after it ended would run twice.
func TestATickWithAnEndedShardsRecordGoneIsNotCompleted(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/resume-pruned/")
	tick := cutShort(t, cli, k)
	if _, err := cli.Delete(context.Background(), k.Record("wide", runs.ShardID(tick.RunID, 5))); err != nil {
		t.Fatal(err)
	}
	if _, err := AddShards(context.Background(), cli, k, tick); err != nil {
		t.Fatal(err)
	}
	if queued := count(t, cli, k.Entry("wide", tick.RunID+"#")); queued != 127 {
		t.Errorf("%d shards queued; want the 127 still queued and none written again", queued)
	}
}
