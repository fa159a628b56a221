package main

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/jobs/pruned"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// The ticks a step did not deliver are looked up in etcd: each counted by
// its record's outcome (its own, or a chunk record's naming it), and one
// with no record named as such.
func TestUndeliveredTicksAreLookedUpByTheirRecords(t *testing.T) {
	from := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	to := from.Add(2 * time.Second)
	delivered := map[string]bool{
		"b1-00000@" + from.Format(time.RFC3339Nano):                  true,
		"b1-00001@" + from.Format(time.RFC3339Nano):                  true,
		"b1-00000@" + from.Add(time.Second).Format(time.RFC3339Nano): true,
	}
	ticks := undeliveredTicks("b1-", 2, from, to, delivered)
	if len(ticks) != 1 || ticks[0].job != "b1-00001" || !ticks[0].at.Equal(from.Add(time.Second)) {
		t.Fatalf("undelivered %v, want b1-00001 at %s", ticks, from.Add(time.Second))
	}
	cli := etcdtest.Start(t).Client()
	e := &env{cli: cli}
	missing := []undelivered{{"b1-00001", from.Add(time.Second)}, {"b1-00002", from}, {"b1-00003", from}, {"b1-00004", from}, {"b1-00005", from}}
	shedAt := runs.ChunkRecord{At: from, EndedAt: from.Add(2 * time.Second), Runs: []runs.ShedRun{{Job: "b1-00005", Outcome: runs.Missed}}}
	if _, err := cli.Put(t.Context(), layout.ShedRecord(from, "w.1", "g", 0), runs.EncodeChunkRecord(&shedAt)); err != nil {
		t.Fatal(err) // shed in a chunk record: missed
	}
	if _, err := cli.Put(t.Context(), layout.Entry("b1-00004", runs.ID("b1-00004", from)), `{}`); err != nil {
		t.Fatal(err) // queued, not decided yet
	}
	if _, err := cli.Put(t.Context(), layout.Record("b1-00001", runs.ID("b1-00001", from.Add(time.Second))), `{"outcome":"skipped"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(t.Context(), layout.Record("b1-00002", runs.ID("b1-00002", from)), `{"outcome":"failed"}`); err != nil {
		t.Fatal(err)
	}
	queued, err := e.queuedRuns(t.Context()) // as the grace ends
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(t.Context(), layout.Queue(), clientv3.WithPrefix()); err != nil {
		t.Fatal(err) // the job's removal withdraws its entry, recording nothing
	}
	got, named, err := e.recordsOf(t.Context(), missing, queued)
	if err != nil {
		t.Fatal(err)
	}
	if got["skipped"] != 1 || got["failed"] != 1 || got["none"] != 1 || got["pending"] != 1 || got["missed"] != 1 {
		t.Errorf("records %v, want one skipped, one failed, one pending, one missed (in a chunk record), one none", got)
	}
	// The tick with no record is named, to be looked for in the logs.
	if note := recordsNote(got, named); note != " (records: NO RECORD 1 [b1-00003@2026-12-01T10:00:00Z], failed 1, missed 1, pending 1, skipped 1)" {
		t.Errorf("note %q", note)
	}
	if got, _, _ := e.recordsOf(t.Context(), make([]undelivered, maxRecordLookups+1), nil); got != nil {
		t.Errorf("past %d ticks: looked up %v, want none", maxRecordLookups, got)
	}
}

// A tick with no record that its job's pruned stretches cover was pruned;
// one whose job holds skipped_history_limit records of ticks that did not
// run may have been (the history prunes the first written, whatever their
// ticks). Both are accounted, and told apart from one with no record,
// which is what the step's unaccounted ticks are then counted from.
func TestAPrunedTickIsToldApartFromOneWithNoRecord(t *testing.T) {
	from := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cli := etcdtest.Start(t).Client()
	e := &env{cli: cli}
	put := func(job string, at time.Time, outcome runs.Outcome) {
		t.Helper()
		rec := runs.Record{Job: job, RunID: runs.ID(job, at), ScheduledAt: at, Outcome: outcome}
		if _, err := cli.Txn(t.Context()).Then(queue.RecordOps(layout, &rec)...).Commit(); err != nil {
			t.Fatal(err) // as the engine writes it: a record that did not run has its marker
		}
	}
	for i := range config.DefaultSkippedHistoryLimit {
		put("full", from.Add(time.Duration(i+1)*time.Second), runs.Skipped)
		put("short", from.Add(time.Duration(i+1)*time.Second), runs.Succeeded)
	}
	put("short", from.Add(time.Hour), runs.Skipped)
	// covered: its history under the limit (its ticks were taken out of
	// chunk records, which leave no marker), its stretches covering the
	// first minute.
	put("covered", from.Add(time.Hour), runs.Skipped)
	st := pruned.Stretches{}.Add(from, from.Add(time.Minute))
	if _, err := cli.Put(t.Context(), layout.Pruned("covered"), st.Encode()); err != nil {
		t.Fatal(err)
	}
	missing := []undelivered{
		{"full", from},                     // older than every not-run record of a full history: pruned
		{"full", from.Add(time.Minute)},    // newer than the oldest: written before them, pruned
		{"covered", from.Add(time.Second)}, // in its pruned stretches: pruned
		{"covered", from.Add(time.Hour)},   // has its record
		{"covered", from.Add(2 * time.Hour)},
		{"short", from},   // the job holds one not-run record: nothing pruned
		{"nothing", from}, // no record of the job at all
	}
	got, _, err := e.recordsOf(t.Context(), missing, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got["pruned"] != 3 || got["none"] != 3 || got["skipped"] != 1 {
		t.Errorf("records %v, want three pruned, three none, one skipped", got)
	}
	s := burstSide{Due: 100, Delivered: 50, Skipped: 50, Records: got}
	if s.unaccounted() != 3 {
		t.Errorf("unaccounted %v with the lookups %v, want 3 (the skipped counter says 0)", s.unaccounted(), got)
	}
	s.Records = nil
	if s.unaccounted() != 0 {
		t.Errorf("unaccounted %v without lookups, want the counter's 0", s.unaccounted())
	}
}

// A step's profiles start with its window and are waited for; a window
// that never opened leaves nothing to wait for.
func TestProfilesStartWithTheWindow(t *testing.T) {
	_, wait := profileAtStart(func() { t.Error("saved though the window never opened") })
	wait() // returns: nothing started
	saved := false
	atStart, wait := profileAtStart(func() { saved = true })
	atStart()
	wait()
	if !saved {
		t.Error("wait returned before the profile was saved")
	}
}
