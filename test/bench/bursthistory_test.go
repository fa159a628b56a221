package main

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A step's jobs start with history_limit records each, of runs that
// succeeded before the step: what the prune sees in a steady state.
func TestSeededHistoriesAreFullAndBeforeTheStep(t *testing.T) {
	cli := etcdtest.Start(t).Client()
	e := &env{cli: cli}
	before := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	n, err := e.seedHistory(t.Context(), "b7-", 3, before)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3*config.DefaultHistoryLimit {
		t.Errorf("seeded %d, want %d", n, 3*config.DefaultHistoryLimit)
	}
	if held, err := e.recordsHeld(t.Context()); err != nil || held != int64(n) {
		t.Errorf("records held %d (%v), want the %d seeded", held, err, n)
	}
	for i := range 3 {
		job := burstJobName("b7-", i)
		resp, err := cli.Get(t.Context(), layout.JobRuns(job), clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != config.DefaultHistoryLimit {
			t.Fatalf("%s: %d records, want %d", job, len(resp.Kvs), config.DefaultHistoryLimit)
		}
		for _, kv := range resp.Kvs {
			rec, err := runs.DecodeRecord(kv.Value)
			if err != nil || rec.Outcome != runs.Succeeded || !rec.ScheduledAt.Before(before) || rec.Job != job {
				t.Fatalf("%s: record %s = %+v (%v), want a success of %s due before %s", job, kv.Key, rec, err, job, before)
			}
		}
		// Runs that executed: no unstarted marker, so they count
		// against history_limit, as a real run's record does.
		if marks, err := cli.Get(t.Context(), layout.Unstarted(job), clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || marks.Count != 0 {
			t.Errorf("%s: %v unstarted markers (%v), want none", job, marks.Count, err)
		}
	}
}
