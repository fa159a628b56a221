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

// A shard that ended and whose record is gone (pruned: a job keeps
// history_limit records, and a tick of 256 shards outgrows 100) is not
// written again: its part was applied, which its other shards show. The
// parts never applied are.
func TestAPrunedShardIsNotWrittenAgain(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/resume-pruned/")
	tick := cutShort(t, cli, k)
	pruned := runs.ShardID(tick.RunID, 5)
	if _, err := cli.Delete(context.Background(), k.Record("wide", pruned)); err != nil {
		t.Fatal(err)
	}
	if _, err := AddShards(context.Background(), cli, k, tick); err != nil {
		t.Fatal(err)
	}
	if queued := count(t, cli, k.Entry("wide", tick.RunID+"#")); queued != 199 {
		t.Errorf("%d shards queued; want 199, every one but the pruned", queued)
	}
	if resp, err := cli.Get(context.Background(), k.Entry("wide", pruned)); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("%s, ended and pruned, queued again (%v)", pruned, err)
	}
}

// A part every shard of which ended and was pruned cannot be told from one
// never written: the fan-in counts more ends than the written parts show
// records for. Nothing is written then.
func TestAPartWhollyPrunedLeavesTheTickAsItIs(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/resume-part-pruned/")
	tick := cutShort(t, cli, k)
	ctx := context.Background()
	for i := ShardPart; i < 2*ShardPart; i++ {
		shard := runs.ShardID(tick.RunID, i)
		if _, err := cli.Txn(ctx).Then(
			clientv3.OpDelete(k.Entry("wide", shard)),
			clientv3.OpPut(k.FanIn("wide", tick.RunID), FanInPending),
		).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := AddShards(ctx, cli, k, tick); err != nil {
		t.Fatal(err)
	}
	if queued := count(t, cli, k.Entry("wide", tick.RunID+"#")); queued != ShardPart-1 {
		t.Errorf("%d shards queued; want the %d of the first part still queued, none written", queued, ShardPart-1)
	}
}

// cutAfterFirst is a real client whose caller's context ends once the
// first transaction applied: as an API request's budget runs out between
// a fan-out's parts.
type cutAfterFirst struct {
	clientv3.KV
	cancel context.CancelFunc
	txns   int
}

func (c *cutAfterFirst) Txn(ctx context.Context) clientv3.Txn {
	if c.txns++; c.txns == 2 {
		c.cancel()
	}
	return c.KV.Txn(ctx)
}

// A trigger whose context ends after its fan-out's first part (an API
// request's 5 s budget spent on a slow etcd) still queues every shard: a
// trigger without an idempotency key cannot be tried again as the same
// tick, and would stay unfinished.
func TestAFanOutGoesOnPastItsCallersContext(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/fanout-grace/")
	job := config.Job{Name: "wide", Shards: 200, Schedule: "@manually", HTTP: &config.HTTP{URL: "http://127.0.0.1:1/"}}
	at := time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)
	tick := NewEntry(runs.ManualID("wide", "01KEYLESS"), &job, nil, at, at, 1, runs.Manual)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	created, err := AddShards(ctx, &cutAfterFirst{KV: cli, cancel: cancel}, k, tick)
	if !created || err != nil {
		t.Errorf("created %v, %v; want the tick created", created, err)
	}
	if queued := count(t, cli, k.Entry("wide", tick.RunID+"#")); queued != 200 {
		t.Errorf("%d shards queued, want 200", queued)
	}
}
