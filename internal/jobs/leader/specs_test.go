package leader

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// withSpecViews gives l a queue view and a spec copy. The queue view is
// never filled: the collection must find what refers to a spec by its own
// read, not by trusting a view that may lag.
func withSpecViews(l *leader) {
	l.d.Specs = queue.NewSpecs(l.d.Keys, l.d.Client, nil)
	l.d.Queue = queue.NewView(l.d.Keys, nil, l.d.Specs)
}

// loadSpecs fills l's spec copy from etcd.
func loadSpecs(t *testing.T, l *leader) {
	t.Helper()
	resp, err := l.d.Client.Get(t.Context(), l.d.Keys.Specs(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	l.d.Specs.Reset(resp.Kvs, resp.Header.Revision)
}

func specExists(t *testing.T, cli *clientv3.Client, key string) bool {
	t.Helper()
	resp, err := cli.Get(t.Context(), key, clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count > 0
}

// The collection deletes the specs no entry refers to, once they were
// unused for the grace, and keeps every spec a pending entry, a running
// entry or a pending retry refers to, even when its view of the queue shows
// none of them.
func TestCollectSpecsKeepsReferencedSpecs(t *testing.T) {
	ctx := t.Context()
	version := func(n string) config.Job {
		j := jobstest.WithDefaults(jobstest.HTTPJob("gc", "@every 1s", "http://127.0.0.1:1/"+n))
		j.Retries.Max = 2
		return j
	}
	pending, running, retried, unused := version("pending"), version("running"), version("retried"), version("unused")
	other := jobstest.WithDefaults(jobstest.HTTPJob("gone", "@every 1s", "http://127.0.0.1:1/gone"))
	l, cli, clock := leaderOn(t, "/gc/", jobstest.Config(pending), time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	withSpecViews(l)

	at := clock.Now()
	entry := func(j *config.Job, i int) *queue.Entry {
		return queue.NewEntry(runs.ID(j.Name, at.Add(time.Duration(i)*time.Second)), j, nil, at, at, 1, runs.Schedule)
	}
	ep, er, et, eu, eo := entry(&pending, 1), entry(&running, 2), entry(&retried, 3), entry(&unused, 4), entry(&other, 5)
	attempt := et.Running("r1", 0, at)
	rec := attempt.Finished(runs.Failed, 0, 1, at, at)
	retry := attempt.Retry(at, &rec)
	var ops []clientv3.Op
	for _, e := range []*queue.Entry{ep, er, et, eu, eo} {
		op, _ := e.SpecOp(l.d.Keys)
		ops = append(ops, op)
	}
	ops = append(ops,
		clientv3.OpPut(l.d.Keys.Entry("gc", ep.RunID), ep.Encode()),
		clientv3.OpPut(l.d.Keys.Entry("gc", er.RunID), er.Running("r1", 0, at).Encode()),
		clientv3.OpPut(l.d.Keys.Entry("gc", et.RunID), retry.Encode()))
	if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
		t.Fatal(err)
	}
	loadSpecs(t, l)

	unusedSince := map[string]time.Time{}
	if err := (&specCollector{base: l.base, book: l.book}).once(ctx, unusedSince); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*queue.Entry{ep, er, et, eu, eo} {
		if !specExists(t, cli, e.SpecKey(l.d.Keys)) {
			t.Fatalf("the first look deleted %s: a spec stays unused for the grace first", e.SpecKey(l.d.Keys))
		}
	}
	clock.Advance(specGrace + time.Second)
	if err := (&specCollector{base: l.base, book: l.book}).once(ctx, unusedSince); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		e    *queue.Entry
		kept bool
	}{
		{"a pending entry's", ep, true},
		{"a running entry's", er, true},
		{"a pending retry's", et, true},
		{"an unused", eu, false},
		{"a removed job's", eo, false},
	} {
		if got := specExists(t, cli, c.e.SpecKey(l.d.Keys)); got != c.kept {
			t.Errorf("%s spec: exists %v, want %v", c.what, got, c.kept)
		}
	}
}

// A spec collected while its job is unused is written again by the next
// tick that refers to it: the collection takes it out of the specs this
// term wrote.
func TestCollectedSpecIsWrittenAgainByTheNextTick(t *testing.T) {
	ctx := t.Context()
	job := jobstest.Job("again", "@every 1m")
	cfg := jobstest.Config(job)
	l, cli, clock := leaderOn(t, "/again/", cfg, time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))
	withSpecViews(l)
	j := &cfg.Jobs[0]
	key := queue.NewEntry("again@x", j, cfg.Resources, clock.Now(), clock.Now(), 1, runs.Schedule).SpecKey(l.d.Keys)

	clock.Advance(59 * time.Second) // the next tick is within the lookahead
	if _, err := l.process(ctx, j); err != nil {
		t.Fatal(err)
	}
	if !specExists(t, cli, key) || !l.book.isWritten(key) {
		t.Fatalf("the first tick did not write its spec %s", key)
	}
	// The run ends: its entry goes.
	if _, err := cli.Delete(ctx, l.d.Keys.JobQueue("again"), clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	loadSpecs(t, l)
	unusedSince := map[string]time.Time{}
	for range 2 {
		if err := (&specCollector{base: l.base, book: l.book}).once(ctx, unusedSince); err != nil {
			t.Fatal(err)
		}
		clock.Advance(specGrace)
	}
	if specExists(t, cli, key) || l.book.isWritten(key) {
		t.Fatalf("unused spec %s not collected (exists %v, noted written %v)", key, specExists(t, cli, key), l.book.isWritten(key))
	}
	if _, err := l.process(ctx, j); err != nil {
		t.Fatal(err)
	}
	if !specExists(t, cli, key) {
		t.Fatal("the next tick's entry refers to a spec it did not write")
	}
}
