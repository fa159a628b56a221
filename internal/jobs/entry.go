package jobs

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/slots"
)

// State of a queue entry.
type State string

const (
	// Pending: waiting for not_before and a free slot.
	Pending State = "pending"
	// Running: claimed. The claim transaction rewrote the entry, so its
	// ModRevision equals the CreateRevision of the slot it took (the
	// fencing token). A running entry whose slot key no longer has that
	// CreateRevision belongs to a holder that died: the run is lost.
	Running State = "running"
)

// Entry is the value of queue/<job>/<run-id>. It carries the job spec, so a
// worker whose config file is older runs what the leader scheduled.
type Entry struct {
	RunID       string          `json:"run_id"`
	Job         string          `json:"job"`
	ScheduledAt time.Time       `json:"scheduled_at"`
	NotBefore   time.Time       `json:"not_before"`
	Attempt     int             `json:"attempt"`
	Trigger     runs.Trigger    `json:"trigger"`
	Spec        config.Job      `json:"spec"`
	Resources   []ResourceLimit `json:"resources,omitempty"`
	State       State           `json:"state"`
	// CatchUp marks a tick run late by the catch_up policy. Caught-up
	// ticks come due together; they wait for a slot in turn (until the
	// starting deadline) instead of skipping one another.
	CatchUp bool `json:"catch_up,omitempty"`
	// Previous carries the earlier attempts of a retried run into its
	// final record.
	Previous []runs.Attempt `json:"previous_attempts,omitempty"`

	// Set while running.
	Holder    string    `json:"holder,omitempty"`
	Slot      int       `json:"slot,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
}

// ResourceLimit is a shared resource a run takes one slot of, with the limit
// the leader's config gave it.
type ResourceLimit struct {
	Name  string `json:"name"`
	Limit int    `json:"limit"`
}

func (e *Entry) slotResources() []slots.Resource {
	out := make([]slots.Resource, len(e.Resources))
	for i, r := range e.Resources {
		out[i] = slots.Resource{Name: r.Name, Limit: r.Limit}
	}
	return out
}

func (e *Entry) encode() string {
	b, err := json.Marshal(e)
	if err != nil {
		// Every field is plain data; this cannot fail.
		panic(fmt.Sprintf("jobs: encode entry: %v", err))
	}
	return string(b)
}

func decodeEntry(b []byte) (*Entry, error) {
	var e Entry
	// The outer Spec is less nested than Entry's, so it takes "spec".
	w := struct {
		*Entry
		Spec json.RawMessage `json:"spec"`
	}{Entry: &e}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("jobs: decode queue entry: %w", err)
	}
	spec, err := specs.decode(w.Spec)
	if err != nil {
		return nil, fmt.Errorf("jobs: decode queue entry: spec: %w", err)
	}
	e.Spec = *spec
	return &e, nil
}

// newEntry is a pending run of job at tick (or now, for manual runs).
func newEntry(runID string, job *config.Job, resources []config.Resource, scheduledAt, notBefore time.Time, attempt int, trigger runs.Trigger) *Entry {
	e := &Entry{
		RunID:       runID,
		Job:         job.Name,
		ScheduledAt: scheduledAt.UTC(),
		NotBefore:   notBefore.UTC(),
		Attempt:     attempt,
		Trigger:     trigger,
		Spec:        *job,
		State:       Pending,
	}
	for _, name := range job.Resources {
		for _, r := range resources {
			if r.Name == name {
				e.Resources = append(e.Resources, ResourceLimit{Name: r.Name, Limit: r.Limit})
			}
		}
	}
	return e
}

// record starts the run record of this entry.
func (e *Entry) record(outcome runs.Outcome) runs.Record {
	return runs.Record{
		RunID:       e.RunID,
		Job:         e.Job,
		Attempt:     e.Attempt,
		Trigger:     e.Trigger,
		ScheduledAt: e.ScheduledAt,
		StartedAt:   e.StartedAt,
		Holder:      e.Holder,
		Slot:        e.Slot,
		Outcome:     outcome,
		Previous:    e.Previous,
	}
}

func encodeRecord(r *runs.Record) string {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("jobs: encode record: %v", err))
	}
	return string(b)
}

func encodeJob(j *config.Job) string {
	b, err := json.Marshal(j)
	if err != nil {
		panic(fmt.Sprintf("jobs: encode job: %v", err))
	}
	return string(b)
}

// retry is the pending entry of the next attempt after the attempt that
// rec records, or nil when no retries remain.
func (e *Entry) retry(now time.Time, rec *runs.Record) *Entry {
	if e.Attempt >= 1+e.Spec.Retries.Max {
		return nil
	}
	next := *e
	next.Previous = append(append([]runs.Attempt(nil), e.Previous...), rec.Summary())
	next.Attempt = e.Attempt + 1
	next.Trigger = runs.Retry
	next.NotBefore = now.Add(e.Spec.Retries.Delay(e.Attempt)).UTC()
	next.State = Pending
	next.Holder, next.Slot, next.StartedAt = "", 0, time.Time{}
	return &next
}
