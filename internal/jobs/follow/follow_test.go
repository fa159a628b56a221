package follow

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/notify"
	"github.com/etcdsched/scheduler/internal/runs"
)

func chainConfig() *config.Config {
	up := jobstest.HTTPJob("extract", "@every 1s", "http://127.0.0.1:1/")
	down := jobstest.HTTPJob("transform", "@yearly", "http://127.0.0.1:1/")
	down.After = &config.After{Job: "extract", On: []string{"succeeded"}}
	cfg := jobstest.Config(up, down)
	cfg.Notify.Sinks = []config.Sink{{Name: "ops", URL: "http://127.0.0.1:1/", Format: config.FormatJSON,
		On: []string{"failed", "recovered"}}}
	cfg.Notify.Default = []string{"ops"}
	return cfg
}

// end writes the end of e's attempt as the release does (its ops in one
// transaction) and fails the test unless the transaction applies.
func end(t *testing.T, cli *clientv3.Client, k keys.Layout, cfg *config.Config, e *queue.Entry, outcome runs.Outcome, at time.Time) int64 {
	t.Helper()
	rec := e.Finished(outcome, 0, 1, at, at)
	ops, _ := End(k, cfg, k.Entry(e.Job, e.RunID), e, &rec, at)
	resp, err := cli.Txn(context.Background()).Then(ops...).Commit()
	if err != nil || !resp.Succeeded {
		t.Fatalf("end of %s (%s): %v", e.RunID, outcome, err)
	}
	return resp.Header.Revision
}

// The end of a run written again (a release repeated after a lost response,
// or recorded by a new leader) queues no second chained run and does not
// fail; nor does it once the chained run has finished and left its entry.
func TestEndRepeatedQueuesOneChainedRun(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/follow/")
	cfg := chainConfig()
	now := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	up := queue.NewEntry(runs.ID("extract", now), cfg.Job("extract"), nil, now, now, 1, runs.Schedule)
	up.Input = []byte(`{"day":"2026-11-22"}`)
	end(t, cli, k, cfg, up, runs.Succeeded, now)

	id := runs.ChainID("transform", up.RunID)
	key := k.Entry("transform", id)
	get := func() *clientv3.GetResponse {
		resp, err := cli.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := get()
	if len(first.Kvs) != 1 {
		t.Fatalf("no chained entry %s", key)
	}
	d, err := queue.Decode(first.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	// The chained entry's spec was written with it: it resolves.
	r, err := queue.NewSpecs(k, cli, nil).Resolve(context.Background(), &queue.Item{Entry: d, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if d.Trigger != runs.Chain || d.UpstreamRunID != up.RunID || string(d.Input) != string(up.Input) || r.Spec.Name != "transform" {
		t.Errorf("chained entry %+v: want trigger chain, upstream %s, the upstream's input", d, up.RunID)
	}

	end(t, cli, k, cfg, up, runs.Succeeded, now.Add(time.Second))
	if again := get(); again.Kvs[0].ModRevision != first.Kvs[0].ModRevision {
		t.Errorf("a repeated end rewrote the chained entry (revision %d, then %d)", first.Kvs[0].ModRevision, again.Kvs[0].ModRevision)
	}

	// The chained run finished: its entry gone, its record written.
	if _, err := cli.Txn(context.Background()).Then(clientv3.OpDelete(key),
		clientv3.OpPut(k.Record("transform", id), "{}")).Commit(); err != nil {
		t.Fatal(err)
	}
	end(t, cli, k, cfg, up, runs.Succeeded, now.Add(2*time.Second))
	if again := get(); len(again.Kvs) != 0 {
		t.Errorf("a repeated end queued the finished chained run %s again", id)
	}
	// A failed end chains nothing (on: [succeeded]).
	failed := queue.NewEntry(runs.ID("extract", now.Add(time.Second)), cfg.Job("extract"), nil, now, now, 1, runs.Schedule)
	end(t, cli, k, cfg, failed, runs.Failed, now)
	if resp, _ := cli.Get(context.Background(), k.Entry("transform", runs.ChainID("transform", failed.RunID))); len(resp.Kvs) != 0 {
		t.Errorf("a failed run of extract queued transform")
	}
}

// recovered is decided by the transaction that records the run: the first
// success after failures writes it, the next successes and repeated
// failures write no health at all.
func TestRecoveredOnceAndSteadyStateWritesNothing(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/health/")
	cfg := chainConfig()
	now := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	job := cfg.Job("extract")
	run := func(i int, o runs.Outcome) *queue.Entry {
		at := now.Add(time.Duration(i) * time.Second)
		e := queue.NewEntry(runs.ID("extract", at), job, nil, at, at, 1, runs.Schedule)
		end(t, cli, k, cfg, e, o, at)
		return e
	}
	health := func() (string, int64) {
		resp, err := cli.Get(context.Background(), k.Health("extract"))
		if err != nil || len(resp.Kvs) == 0 {
			return "", 0
		}
		return string(resp.Kvs[0].Value), resp.Kvs[0].ModRevision
	}
	run(0, runs.Succeeded)
	if h, _ := health(); h != "" {
		t.Errorf("health after a first success = %q, want none (nothing to recover from)", h)
	}
	run(1, runs.Failed)
	h1, rev1 := health()
	run(2, runs.TimedOut)
	h2, rev2 := health()
	if h1 != healthFailing || h2 != healthFailing || rev1 != rev2 {
		t.Errorf("health after failures %q@%d, %q@%d: want failing, written once", h1, rev1, h2, rev2)
	}
	ok := run(3, runs.Succeeded)
	run(4, runs.Succeeded)
	resp, err := cli.Get(context.Background(), k.Outbox(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var recovered []string
	for _, kv := range resp.Kvs {
		n, err := notify.Decode(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		if n.Event == config.Recovered {
			recovered = append(recovered, n.Record.RunID)
		}
	}
	if len(recovered) != 1 || recovered[0] != ok.RunID {
		t.Errorf("recovered for runs %v, want once, for %s", recovered, ok.RunID)
	}
	if len(resp.Kvs) != 2 {
		t.Errorf("%d notifications, want 2: failed and recovered (the sink does not want timed_out or succeeded)", len(resp.Kvs))
	}
}

// A chained run whose key the upstream's input does not render is recorded
// skipped in the upstream's transaction, with its unstarted marker, its
// notification and the run chained after it in turn; an end written again
// after the notification was delivered (deleted) writes none of them twice.
func TestChainedRunRecordedSkippedNotifiesAndChains(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	k := keys.New("/skipchain/")
	cfg := chainConfig()
	cfg.Jobs[1].ConcurrencyKey = "{{ .Input.region }}"
	last := jobstest.WithDefaults(jobstest.HTTPJob("last", "@yearly", "http://127.0.0.1:1/"))
	last.After = &config.After{Job: "transform", On: []string{"skipped"}}
	cfg.Jobs = append(cfg.Jobs, last)
	cfg.Notify.Sinks[0].On = []string{"skipped"}
	now := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	up := queue.NewEntry(runs.ID("extract", now), cfg.Job("extract"), nil, now, now, 1, runs.Schedule)
	up.Input = []byte(`{"day":"2026-11-22"}`)
	end(t, cli, k, cfg, up, runs.Succeeded, now)

	id := runs.ChainID("transform", up.RunID)
	note := k.Notification("ops", notify.ID(id, 1, "skipped"))
	get := func(key string) *clientv3.GetResponse {
		t.Helper()
		resp, err := cli.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	rec := get(k.Record("transform", id))
	if len(rec.Kvs) != 1 {
		t.Fatalf("no record of the chained run %s", id)
	}
	r, err := runs.DecodeRecord(rec.Kvs[0].Value)
	if err != nil || r.Outcome != runs.Skipped || r.UpstreamRunID != up.RunID || r.Trigger != runs.Chain {
		t.Errorf("chained record %+v (%v): want skipped, trigger chain, upstream %s", r, err, up.RunID)
	}
	if len(get(k.UnstartedMark("transform", id)).Kvs) != 1 {
		t.Errorf("the skipped chained run has no unstarted marker")
	}
	if len(get(note).Kvs) != 1 {
		t.Errorf("the skipped chained run was not notified")
	}
	next := k.Entry("last", runs.ChainID("last", id))
	if len(get(next).Kvs) != 1 {
		t.Errorf("the run chained after the skipped one was not queued")
	}

	// Delivered: its notification deleted. The upstream's end repeated.
	if _, err := cli.Delete(context.Background(), note); err != nil {
		t.Fatal(err)
	}
	end(t, cli, k, cfg, up, runs.Succeeded, now.Add(time.Second))
	if len(get(note).Kvs) != 0 {
		t.Errorf("a repeated end notified the skipped chained run again")
	}
	if again := get(k.Record("transform", id)); again.Kvs[0].ModRevision != rec.Kvs[0].ModRevision {
		t.Errorf("a repeated end rewrote the skipped chained run's record")
	}
}
