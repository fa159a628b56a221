// Package queue is the run queue in etcd as every replica sees it: the
// entry of one pending or running run (queue/<job>/<run-id>) and its codec,
// the watched view of all entries, the cancel requests (cancel/<run-id>),
// the pause state (jobs/<job>/paused), the one file that builds run records,
// and the unfenced writes anyone may make to an entry it saw.
package queue

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
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
	// Input is what the run is given, a JSON object (SPEC section 12: a
	// trigger's input, its upstream's when chained, or else the job's
	// default); it reaches the target and the record. ConcurrencyKey is
	// the job's concurrency_key rendered over it when the entry was
	// created, so every worker claims the same key.
	Input          json.RawMessage `json:"input,omitempty"`
	ConcurrencyKey string          `json:"concurrency_key,omitempty"`
	State          State           `json:"state"`
	// CatchUp marks a tick run late by the catch_up policy. Caught-up
	// ticks come due together; they wait for a slot in turn (until the
	// starting deadline) instead of skipping one another.
	CatchUp bool `json:"catch_up,omitempty"`
	// Previous carries the earlier attempts of a retried run into its
	// final record.
	Previous []runs.Attempt `json:"previous_attempts,omitempty"`
	// UpstreamRunID is the run whose end queued this one (trigger chain).
	UpstreamRunID string `json:"upstream_run_id,omitempty"`

	// Set while running.
	Holder    string    `json:"holder,omitempty"`
	Slot      int       `json:"slot,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// HeldToken is set while running on a slot a previous attempt kept:
	// the slot's CreateRevision is then older than the entry's ModRevision.
	HeldToken int64 `json:"held_token,omitempty"`
	// Hold is set on a pending retry whose slot the failed attempt kept.
	Hold *Hold `json:"hold,omitempty"`
}

// ResourceLimit is a shared resource a run takes one slot of, with the limit
// the leader's config gave it.
type ResourceLimit struct {
	Name  string       `json:"name"`
	Limit int          `json:"limit"` // 0: a rate only
	Rate  *config.Rate `json:"rate,omitempty"`
}

// NewEntry is a pending run of job at scheduledAt (now, for manual runs),
// due at notBefore.
func NewEntry(runID string, job *config.Job, resources []config.Resource, scheduledAt, notBefore time.Time, attempt int, trigger runs.Trigger) *Entry {
	e := &Entry{
		RunID:       runID,
		Job:         job.Name,
		ScheduledAt: scheduledAt.UTC(),
		NotBefore:   notBefore.UTC(),
		Attempt:     attempt,
		Trigger:     trigger,
		Spec:        *job,
		Input:       job.DefaultInput(),
		State:       Pending,
	}
	for _, name := range job.Resources {
		for _, r := range resources {
			if r.Name == name {
				e.Resources = append(e.Resources, ResourceLimit{Name: r.Name, Limit: r.Limit, Rate: r.Rate})
			}
		}
	}
	return e
}

// RenderKey sets the entry's concurrency key from its job's template and
// its input; the error wraps config.ErrBadKey. Call it where the entry is
// created, so a run whose key is bad never enters the queue.
func (e *Entry) RenderKey() error {
	k, err := e.Spec.ConcurrencyKeyFor(e.Input)
	if err != nil {
		return fmt.Errorf("queue: job %s: %w", e.Job, err)
	}
	e.ConcurrencyKey = k
	return nil
}

// Encode is the entry as stored.
func (e *Entry) Encode() string {
	b, err := json.Marshal(e)
	if err != nil {
		// Every field is plain data; this cannot fail.
		panic(fmt.Sprintf("queue: encode entry: %v", err))
	}
	return string(b)
}

// Decode reads a stored entry. Its spec is shared with every entry of the
// same spec (specs): callers must not change what its maps and slices hold.
func Decode(b []byte) (*Entry, error) {
	var e Entry
	// The outer Spec is less nested than Entry's, so it takes "spec".
	w := struct {
		*Entry
		Spec json.RawMessage `json:"spec"`
	}{Entry: &e}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("queue: decode entry: %w", err)
	}
	spec, err := specs.decode(w.Spec)
	if err != nil {
		return nil, fmt.Errorf("queue: decode entry: spec: %w", err)
	}
	e.Spec = *spec
	return &e, nil
}

// Running is the entry as the claim rewrites it: held by holder since
// startedAt in slot.
func (e *Entry) Running(holder string, slot int, startedAt time.Time) *Entry {
	r := *e
	r.State = Running
	r.Holder = holder
	r.Slot = slot
	r.StartedAt = startedAt.UTC()
	r.HeldToken = 0
	if e.Hold != nil {
		r.HeldToken = e.Hold.Token
	}
	r.Hold = nil
	return &r
}

// Retry is the pending entry of the next attempt after the attempt that
// rec records, or nil when no retries remain.
func (e *Entry) Retry(now time.Time, rec *runs.Record) *Entry {
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
	next.HeldToken, next.Hold = 0, nil
	return &next
}
