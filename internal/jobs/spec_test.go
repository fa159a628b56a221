package jobs_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/keys"
	"github.com/etcdsched/scheduler/internal/poll"
	"github.com/etcdsched/scheduler/internal/runs"
)

// An entry an older version wrote, its spec inline, runs with that spec
// (not the replica's config), and so does its retry: a rolling upgrade
// loses none of the runs the older leader queued.
func TestOldFormatEntryStillRuns(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	// This replica's file points the job nowhere and never schedules it.
	n := etcd.leading("new", newConfig(httpJob("legacy", "@yearly", "http://127.0.0.1:1/file")))

	// What an older version's Entry encoded: every field, the spec inline.
	spec := jobstest.WithDefaults(httpJob("legacy", "@yearly", w.url("status=500")))
	spec.Retries = config.Retries{Max: 1, Backoff: config.Duration(100 * time.Millisecond), MaxBackoff: config.Duration(time.Second)}
	specJSON, err := json.Marshal(&spec)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	runID := runs.ManualID("legacy", "OLD1")
	value := `{"run_id":"` + runID + `","job":"legacy","scheduled_at":"` + now.Format(runs.TimeFormat) +
		`","not_before":"` + now.Format(runs.TimeFormat) + `","attempt":1,"trigger":"manual","spec":` + string(specJSON) +
		`,"state":"pending"}`
	if _, err := n.client.Put(t.Context(), keys.New(testPrefix).Entry("legacy", runID), value); err != nil {
		t.Fatal(err)
	}
	r := awaitRecord(t, n.client, "legacy", runID, func(r runs.Record) bool { return r.Attempt == 2 })
	if r.Outcome != runs.Failed || r.HTTPStatus != 500 || r.Trigger != runs.Retry || len(r.Previous) != 1 || r.Previous[0].Outcome != runs.Failed {
		t.Errorf("record %+v: want attempt 2 failed with 500 after a failed attempt 1", r)
	}
	if hits := w.finished("legacy"); len(hits) != 2 {
		t.Errorf("the witness got %d requests of the old entry's run, want 2 (the attempt and its retry)", len(hits))
	}
}

// A worker never runs an entry whose spec it cannot read: it waits, runs
// it once the spec is there, and records it missed at its starting
// deadline if the spec never comes.
func TestRunWaitsForItsSpec(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	job := httpJob("waits", "@yearly", w.url(""))
	job.StartingDeadline = config.Duration(3 * time.Second)
	cfg := newConfig(job)
	n := etcd.leading("a", cfg)
	layout := keys.New(testPrefix)

	now := time.Now()
	never := queue.NewEntry(runs.ManualID("waits", "NEVER"), &cfg.Jobs[0], cfg.Resources, now, now, 1, runs.Manual)
	laterJob := cfg.Jobs[0]
	laterJob.HTTP = &config.HTTP{Method: "GET", URL: w.url("spec=later"), SuccessCodes: []string{"2xx"}}
	later := queue.NewEntry(runs.ManualID("waits", "LATER"), &laterJob, cfg.Resources, now, now, 1, runs.Manual)
	for _, e := range []*queue.Entry{never, later} {
		if _, err := n.client.Put(t.Context(), layout.Entry("waits", e.RunID), e.Encode()); err != nil {
			t.Fatal(err)
		}
	}
	// An absence is what is checked here: no event marks "the worker saw
	// the entries and declined them", so the test gives it a second.
	time.Sleep(time.Second)
	if hits := w.finished("waits"); len(hits) != 0 {
		t.Fatalf("%d runs without their spec", len(hits))
	}
	spec, _ := later.SpecOp(layout)
	if _, err := n.client.Txn(t.Context()).Then(spec).Commit(); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 20*time.Second, "both runs recorded", func() bool {
		recs := records(t, n.client, "waits")
		_, a := recs[never.RunID]
		_, b := recs[later.RunID]
		return a && b
	})
	recs := records(t, n.client, "waits")
	if r := recs[later.RunID]; r.Outcome != runs.Succeeded {
		t.Errorf("the run whose spec came: %s (%s), want succeeded", r.Outcome, r.Error)
	}
	if r := recs[never.RunID]; r.Outcome != runs.Missed || !strings.Contains(r.Error, "spec") {
		t.Errorf("the run whose spec never came: %s (%s), want missed for want of its spec", r.Outcome, r.Error)
	}
	for _, h := range w.finished("waits") {
		if h.RunID == never.RunID {
			t.Errorf("%s ran without its spec", never.RunID)
		}
	}
}

// The leader's entries carry a ref, not the spec, and the spec they name
// is in etcd, once for all the job's runs.
func TestEntriesReferToOneSpec(t *testing.T) {
	etcd := startEtcd(t)
	w := startWitness(t)
	n := etcd.leading("a", newConfig(httpJob("lean", "@every 1s", w.url("from=file"))))
	poll.For(t, 30*time.Second, "three runs", func() bool { return len(w.finished("lean")) >= 3 })
	layout := keys.New(testPrefix)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	specs, err := n.client.Get(ctx, layout.JobSpecs("lean"), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(specs.Kvs) != 1 || !strings.Contains(string(specs.Kvs[0].Value), "from=file") {
		t.Fatalf("specs of the job: %d, want 1 with its URL", len(specs.Kvs))
	}
	if specs.Kvs[0].Version != 1 {
		t.Errorf("the spec was written %d times, want once", specs.Kvs[0].Version)
	}
	entries, err := n.client.Get(ctx, layout.JobQueue("lean"), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range entries.Kvs {
		e, err := queue.Decode(kv.Value)
		if err != nil {
			t.Fatal(err)
		}
		if e.SpecKey(layout) != string(specs.Kvs[0].Key) || strings.Contains(string(kv.Value), "from=file") {
			t.Errorf("entry %s: %s", kv.Key, kv.Value)
		}
	}
}
