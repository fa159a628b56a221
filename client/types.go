package client

import (
	"encoding/json"

	"github.com/etcdsched/scheduler/internal/runs"
	"github.com/etcdsched/scheduler/internal/wire"
)

// The answer types are the server's (package wire), each with the
// answer's own JSON kept in Raw: the command line prints that for -o json,
// so fields this client does not know yet (a newer server's) still reach
// scripts.

// Job is one job of GET /api/v1/jobs.
type Job struct {
	wire.Job
	Raw json.RawMessage `json:"-"`
}

// Run is a run record, with State set by GET /api/v1/runs/{id} (pending,
// running or finished) and empty in a job's history, which holds finished
// runs only.
type Run struct {
	wire.Run
	Raw json.RawMessage `json:"-"`
}

// Run states of GET /api/v1/runs/{id}.
const (
	StatePending  = wire.StatePending
	StateRunning  = wire.StateRunning
	StateFinished = wire.StateFinished
)

// OutcomeSucceeded is the one outcome a caller waiting for success wants.
const OutcomeSucceeded = runs.Succeeded

// Triggered is the answer of a trigger: the run's id, and whether an
// earlier trigger with the same idempotency key made it already.
type Triggered struct {
	wire.Triggered
	Raw json.RawMessage `json:"-"`
}

// Cancelled is the answer of a cancel: the request is taken, the run not
// ended yet.
type Cancelled struct {
	wire.Cancelled
	Raw json.RawMessage `json:"-"`
}

// Leader is GET /api/v1/leader.
type Leader struct {
	wire.Leader
	Raw json.RawMessage `json:"-"`
}

// Member is one live replica of GET /api/v1/members.
type Member struct {
	wire.Member
	Raw json.RawMessage `json:"-"`
}

// Slot is one row of GET /api/v1/slots: a held slot, or, with Window set,
// a rate window and how much of it is used.
type Slot struct {
	wire.Slot
	Raw json.RawMessage `json:"-"`
}

// Status is GET /api/v1/status: the replica that answered.
type Status struct {
	wire.Status
	Raw json.RawMessage `json:"-"`
}

// keepRaw decodes b into v (a wire type, which decodes plainly) and keeps
// a copy of b.
func keepRaw(b []byte, v any, raw *json.RawMessage) error {
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	*raw = append(json.RawMessage(nil), b...)
	return nil
}

// UnmarshalJSON keeps the answer in Raw.
func (j *Job) UnmarshalJSON(b []byte) error { return keepRaw(b, &j.Job, &j.Raw) }

// UnmarshalJSON keeps the answer in Raw.
func (r *Run) UnmarshalJSON(b []byte) error { return keepRaw(b, &r.Run, &r.Raw) }

// UnmarshalJSON keeps the answer in Raw.
func (t *Triggered) UnmarshalJSON(b []byte) error { return keepRaw(b, &t.Triggered, &t.Raw) }

// UnmarshalJSON keeps the answer in Raw.
func (c *Cancelled) UnmarshalJSON(b []byte) error { return keepRaw(b, &c.Cancelled, &c.Raw) }

// UnmarshalJSON keeps the answer in Raw.
func (l *Leader) UnmarshalJSON(b []byte) error { return keepRaw(b, &l.Leader, &l.Raw) }

// UnmarshalJSON keeps the answer in Raw.
func (m *Member) UnmarshalJSON(b []byte) error { return keepRaw(b, &m.Member, &m.Raw) }

// UnmarshalJSON keeps the answer in Raw.
func (s *Status) UnmarshalJSON(b []byte) error { return keepRaw(b, &s.Status, &s.Raw) }

// UnmarshalJSON keeps the answer in Raw.
func (s *Slot) UnmarshalJSON(b []byte) error { return keepRaw(b, &s.Slot, &s.Raw) }
