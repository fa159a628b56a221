package queue

import (
	"testing"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/jobstest"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Retries back off exponentially from the moment the attempt ended, capped
// at max_backoff, and stop after retries.max; each keeps the run id and
// carries the attempts before it.
func TestRetryBackoff(t *testing.T) {
	ended := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	job := jobstest.WithDefaults(config.Job{Name: "r", Schedule: "@every 1m",
		Retries: config.Retries{Max: 4, Backoff: config.Duration(time.Second), MaxBackoff: config.Duration(5 * time.Second)}})
	e := NewEntry(runs.ID("r", ended), &job, nil, ended, ended, 1, runs.Schedule)
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second}
	for i, d := range want {
		rec := e.Finished(runs.Failed, 0, 1, ended, ended)
		next := e.Retry(ended, &rec)
		if next == nil {
			t.Fatalf("attempt %d: no retry, want one after %s", e.Attempt, d)
		}
		if got := next.NotBefore.Sub(ended); got != d {
			t.Errorf("retry %d after %s, want %s", i+1, got, d)
		}
		if next.Attempt != e.Attempt+1 || next.RunID != e.RunID || next.Trigger != runs.Retry || next.State != Pending {
			t.Errorf("retry %d: %+v", i+1, next)
		}
		if len(next.Previous) != i+1 || next.Previous[i].Attempt != i+1 || next.Previous[i].Outcome != runs.Failed {
			t.Errorf("retry %d carries %+v", i+1, next.Previous)
		}
		e = next
	}
	rec := e.Finished(runs.Failed, 0, 1, ended, ended)
	if next := e.Retry(ended, &rec); next != nil {
		t.Errorf("attempt %d retried past retries.max 4", next.Attempt)
	}
}

// An entry decodes to what was encoded, its spec included, whether the spec
// was decoded before (the cache) or not, and specs that differ stay apart.
func TestEntryRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	a := jobstest.WithDefaults(config.Job{Name: "a", Schedule: "@every 1m", HTTP: &config.HTTP{Method: "POST", URL: "http://127.0.0.1:1/a",
		Headers: map[string]string{"X-Team": "one"}}})
	b := a
	b.HTTP = &config.HTTP{Method: "POST", URL: "http://127.0.0.1:1/a", Headers: map[string]string{"X-Team": "two"}}
	for i, job := range []*config.Job{&a, &a, &b, &a} {
		e := NewEntry(runs.ID(job.Name, at), job, nil, at, at, 1, runs.Schedule)
		e.State, e.Holder, e.Slot = Running, "r1", i
		got, err := Decode([]byte(e.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		if got.Encode() != e.Encode() {
			t.Errorf("entry %d:\n got  %s\n want %s", i, got.Encode(), e.Encode())
		}
	}
	if _, err := Decode([]byte(`{"run_id":"x","spec":{"max_concurrency":"two"}}`)); err == nil {
		t.Error("an entry whose spec does not decode was accepted")
	}
}
