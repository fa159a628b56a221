package queue

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
)

// A tick shed into a chunk record reads, once stored and decoded, as the
// record of its own NotStarted writes reads once stored and decoded: the
// two forms of a shed tick are one record to every reader.
func TestAShedTickReadsAlikeFromItsChunkRecord(t *testing.T) {
	at := time.Date(2026, 12, 4, 5, 0, 1, 500_000_000, time.UTC)
	ended := at.Add(1700 * time.Millisecond)
	pending := func(job, key string) *Entry {
		return &Entry{RunID: runs.ID(job, at), Job: job, ScheduledAt: at, NotBefore: at, Attempt: 1,
			Trigger: runs.Schedule, State: Pending, ConcurrencyKey: key}
	}
	ends := []struct {
		e       *Entry
		outcome runs.Outcome
		why     string
	}{
		{pending("report", ""), runs.Missed, "not started: 1.7s late, and its job's tick at 2026-12-04T05:00:02.5Z is due"},
		{pending("sync", "eu"), runs.Skipped, "not started: the job is paused"},
		{pending("a/b", ""), runs.Missed, ""},
	}
	c := runs.ChunkRecord{At: at, EndedAt: ended}
	for _, x := range ends {
		r, ok := x.e.Shed(x.outcome, x.why)
		if !ok {
			t.Fatalf("%s's shed tick cannot be in a chunk record", x.e.Job)
		}
		c.Runs = append(c.Runs, r)
	}
	stored, err := runs.DecodeChunkRecord([]byte(runs.EncodeChunkRecord(&c)))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ends {
		own := x.e.NotStarted(x.outcome, ended, x.why)
		want, err := runs.DecodeRecord([]byte(EncodeRecord(&own)))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := stored.Find(x.e.Job)
		if !ok || !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("%s from its chunk record:\n%s\nfrom a record of its own:\n%s", x.e.Job, g, w)
		}
	}
	if all := stored.Records(); len(all) != len(ends) {
		t.Errorf("Records: %d, want %d", len(all), len(ends))
	}
	if _, ok := stored.Find("report2"); ok {
		t.Error("Find answered for a job the record does not name")
	}
}

// Only a first attempt of a scheduled tick not started, with no input, can
// be in a chunk record: the record of anything else says more than a chunk
// record keeps.
func TestOnlyAnUnstartedScheduledTickGoesInAChunkRecord(t *testing.T) {
	at := time.Date(2026, 12, 4, 5, 0, 1, 0, time.UTC)
	base := Entry{RunID: runs.ID("j", at), Job: "j", ScheduledAt: at, Attempt: 1, Trigger: runs.Schedule, State: Pending}
	for name, change := range map[string]func(e *Entry, o *runs.Outcome){
		"a retry":             func(e *Entry, _ *runs.Outcome) { e.Attempt, e.Trigger = 2, runs.Retry },
		"an earlier attempt":  func(e *Entry, _ *runs.Outcome) { e.Previous = []runs.Attempt{{Attempt: 1, Outcome: runs.Interrupted}} },
		"a manual run":        func(e *Entry, _ *runs.Outcome) { e.Trigger, e.RunID = runs.Manual, runs.ManualID("j", "01") },
		"a backfilled tick":   func(e *Entry, _ *runs.Outcome) { e.Trigger = runs.Backfill },
		"an input":            func(e *Entry, _ *runs.Outcome) { e.Input = json.RawMessage(`{"a":1}`) },
		"a chained run":       func(e *Entry, _ *runs.Outcome) { e.UpstreamRunID = "up@x" },
		"a run that started":  func(e *Entry, _ *runs.Outcome) { e.Holder, e.StartedAt = "r1", at },
		"another tick's id":   func(e *Entry, _ *runs.Outcome) { e.RunID = runs.ID("j", at.Add(time.Second)) },
		"an outcome that ran": func(_ *Entry, o *runs.Outcome) { *o = runs.Failed },
	} {
		e, o := base, runs.Missed
		change(&e, &o)
		if _, ok := e.Shed(o, "why"); ok {
			t.Errorf("%s went in a chunk record", name)
		}
	}
	if _, ok := base.Shed(runs.Skipped, "why"); !ok {
		t.Error("a skipped first scheduled tick did not go in a chunk record")
	}
}
