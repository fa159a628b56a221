package follow

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/runs"
)

// shardConfig: "extract" of n shards, "transform" chained after its
// succeeded ticks, every failed tick notified to "ops".
func shardConfig(n int) *config.Config {
	cfg := chainConfig()
	cfg.Jobs[0].Shards = n
	cfg.Notify.Sinks[0].On = []string{"failed"}
	return cfg
}

// fanOut writes the shards of extract's tick at at, all parts.
func fanOut(t *testing.T, cli *clientv3.Client, k keys.Layout, cfg *config.Config, at time.Time) []*queue.Entry {
	t.Helper()
	tick := queue.NewEntry(runs.ID("extract", at), cfg.Job("extract"), nil, at, at, 1, runs.Schedule)
	created, err := queue.AddShards(context.Background(), cli, k, tick)
	if err != nil || !created {
		t.Fatalf("fan-out of %s: created %v, %v", tick.RunID, created, err)
	}
	return tick.ShardEntries()
}

// release is a shard's final end as the worker's release writes it: the
// record, the entry's delete and the fan-in, if its record is not written
// yet (the release compares the slot token; the record stands in for it).
func release(cli *clientv3.Client, k keys.Layout, cfg *config.Config, e *queue.Entry, o runs.Outcome, at time.Time) error {
	rec := e.Finished(o, 0, 1, at, at)
	e.Spec.Retries.Max = 0
	ops, retry := End(k, cfg, k.Entry(e.Job, e.RunID), e, &rec, at)
	if retry != nil {
		return fmt.Errorf("%s: a retry follows", e.RunID)
	}
	resp, err := cli.Txn(context.Background()).
		If(clientv3.Compare(clientv3.CreateRevision(k.Record(e.Job, e.RunID)), "=", 0)).Then(ops...).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("%s: recorded already", e.RunID)
	}
	return nil
}

// tickState is the tick's record (ok: the fan-in ran), the chained runs it
// queued and the notifications it wrote, counting each write (a
// notification's key is derived from the tick, so a second fan-in puts it
// again).
func tickState(t *testing.T, cli *clientv3.Client, k keys.Layout, tick string) (rec queue.TickRecord, ok bool, chained, notified int64) {
	t.Helper()
	resp, err := cli.Txn(context.Background()).Then(
		clientv3.OpGet(k.FanIn("extract", tick)),
		clientv3.OpGet(k.Entry("transform", runs.ChainID("transform", tick)), clientv3.WithCountOnly()),
		clientv3.OpGet(k.Outbox(), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		t.Fatal(err)
	}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		rec, ok = queue.DecodeTick(kvs[0].Value)
	}
	for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
		if bytes.Contains(kv.Value, []byte(tick)) {
			notified += kv.Version // a notification written twice may be delivered twice
		}
	}
	return rec, ok, resp.Responses[1].GetResponseRange().Count, notified
}

// The tick's outcome is the worst of its shards' whatever the order they
// end in; the fan-in is written by the last end only, once.
func TestFanInTakesTheWorstOutcome(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/fanin/")
	cfg := shardConfig(4)
	base := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for i, tc := range []struct {
		ends []runs.Outcome
		want runs.Outcome
	}{
		{[]runs.Outcome{runs.Succeeded, runs.Succeeded, runs.Succeeded, runs.Succeeded}, runs.Succeeded},
		{[]runs.Outcome{runs.Failed, runs.Succeeded, runs.Lost, runs.Succeeded}, runs.Failed},
		{[]runs.Outcome{runs.Succeeded, runs.Lost, runs.Succeeded, runs.Failed}, runs.Failed},
		{[]runs.Outcome{runs.Skipped, runs.Interrupted, runs.Succeeded, runs.Cancelled}, runs.Interrupted},
		{[]runs.Outcome{runs.Succeeded, runs.Succeeded, runs.Succeeded, runs.TimedOut}, runs.TimedOut},
		{[]runs.Outcome{runs.Missed, runs.Succeeded, runs.Succeeded, runs.Succeeded}, runs.Missed},
	} {
		at := base.Add(time.Duration(i) * time.Minute)
		shards := fanOut(t, cli, k, cfg, at)
		for s, o := range tc.ends {
			if _, done, _, _ := tickState(t, cli, k, shards[0].Tick()); done {
				t.Fatalf("case %d: the tick fanned in before shard %d ended", i, s)
			}
			if err := release(cli, k, cfg, shards[s], o, at); err != nil {
				t.Fatal(err)
			}
		}
		rec, done, chained, notified := tickState(t, cli, k, shards[0].Tick())
		if !done || rec.Outcome != tc.want || rec.Shards != 4 {
			t.Errorf("case %d %v: tick record %+v (fanned in %v), want outcome %s of 4 shards", i, tc.ends, rec, done, tc.want)
		}
		wantChained, wantNotified := int64(0), int64(0)
		if tc.want == runs.Succeeded {
			wantChained = 1
		}
		if tc.want == runs.Failed {
			wantNotified = 1
		}
		if chained != wantChained || notified != wantNotified {
			t.Errorf("case %d %v: %d chained runs and %d notifications, want %d and %d", i, tc.ends, chained, notified, wantChained, wantNotified)
		}
	}
}

// The last two shards of a tick end at the same instant, in two
// transactions racing to etcd (two replicas): exactly one of them writes
// the fan-in, over many ticks.
func TestFanInOnceWhenLastShardsEndTogether(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	other := etcdtest.NewClient(t, cli.Endpoints())
	k := keys.New("/fanin/")
	cfg := shardConfig(3)
	base := time.Date(2026, 11, 25, 11, 0, 0, 0, time.UTC)
	for i := range 20 {
		at := base.Add(time.Duration(i) * time.Minute)
		shards := fanOut(t, cli, k, cfg, at)
		if err := release(cli, k, cfg, shards[0], runs.Succeeded, at); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 2)
		for j, c := range []*clientv3.Client{cli, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[j] = release(c, k, cfg, shards[1+j], runs.Failed, at)
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		rec, done, chained, notified := tickState(t, cli, k, shards[0].Tick())
		if !done || rec.Outcome != runs.Failed || chained != 0 || notified != 1 {
			t.Fatalf("tick %d: record %+v (fanned in %v), %d chained, %d notifications; want failed, 0 chained, 1 notification",
				i, rec, done, chained, notified)
		}
	}
}

// A tick's fan-out written in part (a leader that died between parts) and
// then again in full writes each shard once: the shards of the first
// write keep their entries, the rest are added, and the tick fans in once
// when all have ended.
func TestFanOutRedoneWritesOnlyMissingShards(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/fanin/")
	cfg := shardConfig(config.MaxShards)
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	tick := queue.NewEntry(runs.ID("extract", at), cfg.Job("extract"), nil, at, at, 1, runs.Schedule)
	shards := tick.ShardEntries()
	parts := queue.FanOutParts(k, shards)
	if len(parts) < 4 {
		t.Fatalf("%d parts for 256 shards, want at least 4 (etcd's 128 ops a transaction)", len(parts))
	}
	commit := func(ops []clientv3.Op) {
		if _, err := cli.Txn(context.Background()).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	commit(parts[0])
	commit(parts[2])
	// The first part's shard 0 ends before the redo.
	if err := release(cli, k, cfg, shards[0], runs.Succeeded, at); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		commit(p)
	}
	resp, err := cli.Get(context.Background(), k.JobQueue("extract"), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != len(shards)-1 {
		t.Fatalf("%d shard entries after the redo, want %d (shard 0 ended)", len(resp.Kvs), len(shards)-1)
	}
	for _, kv := range resp.Kvs {
		if kv.Version != 1 {
			t.Errorf("%s written %d times, want once", kv.Key, kv.Version)
		}
	}
	for _, s := range shards[1:] {
		if err := release(cli, k, cfg, s, runs.Succeeded, at); err != nil {
			t.Fatal(err)
		}
	}
	rec, done, chained, _ := tickState(t, cli, k, tick.RunID)
	if !done || rec.Outcome != runs.Succeeded || chained != 1 {
		t.Errorf("after every shard ended: record %+v (fanned in %v), %d chained; want succeeded, one chained run", rec, done, chained)
	}
}
