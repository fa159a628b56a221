package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
)

// An entry is stored in one of two forms.
//
// The lean form (an entry with a SpecRef: everything this version
// creates) names its spec, "spec": "<ref>", and leaves out what its run id
// and the defaults already say: the job (the run id's prefix), scheduled_at
// when the run id is a scheduled run's, attempt 1, trigger "schedule". A
// running entry also leaves out what only a pending one needs (not_before,
// catch_up): the claim's rewrite carries what changed (state, holder,
// slot, started_at) and what a record of the run or its retry needs.
// An older version cannot decode "spec" as a string, so it ignores a lean
// entry (with a warning) instead of running it without its spec.
//
// The inline form is what older versions wrote and read: every field, the
// spec as an object, the resource limits beside it. An entry read in that
// form keeps it.

// wire is both forms, for decoding; encodeLean fills it.
type wire struct {
	RunID       string          `json:"run_id"`
	Job         string          `json:"job,omitempty"`
	ScheduledAt time.Time       `json:"scheduled_at,omitzero"`
	NotBefore   time.Time       `json:"not_before,omitzero"`
	Attempt     int             `json:"attempt,omitempty"`
	Trigger     runs.Trigger    `json:"trigger,omitempty"`
	Spec        json.RawMessage `json:"spec,omitempty"`
	shared
}

// inline is the inline form exactly as older versions encode it (their
// Entry's fields and tags, in their order), so they read what this
// version writes back.
type inline struct {
	RunID       string       `json:"run_id"`
	Job         string       `json:"job"`
	ScheduledAt time.Time    `json:"scheduled_at"`
	NotBefore   time.Time    `json:"not_before"`
	Attempt     int          `json:"attempt"`
	Trigger     runs.Trigger `json:"trigger"`
	Spec        *config.Job  `json:"spec"`
	shared
}

// shared are the fields both forms write alike, after the spec, in the
// order older versions wrote them (encoding/json writes an embedded
// struct's fields in its place).
type shared struct {
	Resources      []ResourceLimit `json:"resources,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	ConcurrencyKey string          `json:"concurrency_key,omitempty"`
	State          State           `json:"state"`
	CatchUp        bool            `json:"catch_up,omitempty"`
	Previous       []runs.Attempt  `json:"previous_attempts,omitempty"`
	UpstreamRunID  string          `json:"upstream_run_id,omitempty"`
	Holder         string          `json:"holder,omitempty"`
	Slot           int             `json:"slot,omitempty"`
	StartedAt      time.Time       `json:"started_at,omitzero"`
	HeldToken      int64           `json:"held_token,omitempty"`
	Hold           *Hold           `json:"hold,omitempty"`
}

// Encode is the entry as stored.
func (e *Entry) Encode() string {
	var v any
	if e.SpecRef == "" {
		v = e.encodeInline()
	} else {
		v = e.encodeLean()
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Every field is plain data; this cannot fail.
		panic(fmt.Sprintf("queue: encode entry: %v", err))
	}
	return string(b)
}

func (e *Entry) encodeLean() *wire {
	ref, _ := json.Marshal(e.SpecRef)
	w := &wire{RunID: e.RunID, Spec: ref, shared: e.shared()}
	w.Resources = nil // the spec's, once resolved
	w.CatchUp = false // a pending entry's: set below
	if e.Job != runs.JobOf(e.RunID) {
		w.Job = e.Job
	}
	if at, ok := runs.ScheduledAtOf(e.RunID); !ok || !at.Equal(e.ScheduledAt) || e.ScheduledAt.Location() != time.UTC {
		w.ScheduledAt = e.ScheduledAt
	}
	if e.Attempt != 1 {
		w.Attempt = e.Attempt
	}
	if e.Trigger != runs.Schedule {
		w.Trigger = e.Trigger
	}
	if e.State != Running {
		w.NotBefore, w.CatchUp = e.NotBefore, e.CatchUp
	}
	return w
}

func (e *Entry) encodeInline() *inline {
	return &inline{
		RunID: e.RunID, Job: e.Job, ScheduledAt: e.ScheduledAt, NotBefore: e.NotBefore, Attempt: e.Attempt,
		Trigger: e.Trigger, Spec: &e.Spec, shared: e.shared(),
	}
}

func (e *Entry) shared() shared {
	return shared{
		Resources: e.Resources, Input: e.Input, ConcurrencyKey: e.ConcurrencyKey, State: e.State, CatchUp: e.CatchUp,
		Previous: e.Previous, UpstreamRunID: e.UpstreamRunID,
		Holder: e.Holder, Slot: e.Slot, StartedAt: e.StartedAt, HeldToken: e.HeldToken, Hold: e.Hold,
	}
}

// Decode reads a stored entry in either form. A lean entry comes back
// unresolved (its Spec unknown); an inline one resolved.
func Decode(b []byte) (*Entry, error) {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("queue: decode entry: %w", err)
	}
	e := &Entry{
		RunID: w.RunID, Job: w.Job, ScheduledAt: w.ScheduledAt, NotBefore: w.NotBefore, Attempt: w.Attempt,
		Trigger: w.Trigger, Resources: w.Resources, Input: w.Input, ConcurrencyKey: w.ConcurrencyKey,
		State: w.State, CatchUp: w.CatchUp, Previous: w.Previous, UpstreamRunID: w.UpstreamRunID,
		Holder: w.Holder, Slot: w.Slot, StartedAt: w.StartedAt, HeldToken: w.HeldToken, Hold: w.Hold,
	}
	spec := bytes.TrimSpace(w.Spec)
	if len(spec) > 0 && spec[0] == '"' {
		if err := json.Unmarshal(spec, &e.SpecRef); err != nil {
			return nil, fmt.Errorf("queue: decode entry: spec: %w", err)
		}
		if e.SpecRef == "" {
			return nil, errors.New("queue: decode entry: empty spec ref")
		}
		if e.Job == "" {
			e.Job = runs.JobOf(e.RunID)
		}
		if e.ScheduledAt.IsZero() {
			e.ScheduledAt, _ = runs.ScheduledAtOf(e.RunID)
		}
		if e.Attempt == 0 {
			e.Attempt = 1
		}
		if e.Trigger == "" {
			e.Trigger = runs.Schedule
		}
		e.Resources = nil // the spec's, once resolved
		return e, nil
	}
	// Inline, as older versions wrote it: every field is there.
	if len(spec) > 0 && !bytes.Equal(spec, []byte("null")) {
		if err := json.Unmarshal(spec, &e.Spec); err != nil {
			return nil, fmt.Errorf("queue: decode entry: spec: %w", err)
		}
	}
	e.resolved = true
	return e, nil
}
