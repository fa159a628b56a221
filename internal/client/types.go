package client

import (
	"encoding/json"
	"strings"
	"time"
)

// The answer types hold the fields callers act on. Each also keeps the
// answer's own JSON in Raw: the command line prints that for -o json, so
// fields this client does not know yet (a newer server's) still reach
// scripts.

// Job is one job of GET /api/v1/jobs.
type Job struct {
	Name           string    `json:"name"`
	Spec           JobSpec   `json:"spec"`
	Paused         bool      `json:"paused"`
	PauseReason    string    `json:"pause_reason"`
	PausedAt       time.Time `json:"paused_at"`
	PausedUntil    time.Time `json:"paused_until"`
	NextRun        time.Time `json:"next_run"`
	LastRun        *Run      `json:"last_run"`
	Running        int       `json:"running"`
	MaxConcurrency int       `json:"max_concurrency"`
	Pending        int       `json:"pending"`   // due, waiting to start
	Scheduled      int       `json:"scheduled"` // queued ahead of their due time

	Raw json.RawMessage `json:"-"`
}

// JobSpec is the part of a job's declaration a listing shows.
type JobSpec struct {
	Schedule  string   `json:"schedule"`
	Schedules []string `json:"schedules"`
	Timezone  string   `json:"timezone"`
	Jitter    string   `json:"jitter"`
	// ConcurrencyKey, when set, makes max_concurrency hold per key.
	ConcurrencyKey string          `json:"concurrency_key"`
	HTTP           json.RawMessage `json:"http"`
	Exec           json.RawMessage `json:"exec"`
}

// ScheduleText shows the job's schedules on one line.
func (s JobSpec) ScheduleText() string {
	if len(s.Schedules) > 0 {
		return strings.Join(s.Schedules, " | ")
	}
	return s.Schedule
}

// Target is "http" or "exec", whichever the job declares.
func (s JobSpec) Target() string {
	switch {
	case len(s.HTTP) > 0 && string(s.HTTP) != "null":
		return "http"
	case len(s.Exec) > 0 && string(s.Exec) != "null":
		return "exec"
	}
	return ""
}

// Run is a run record, with State set by GET /api/v1/runs/{id} (pending,
// running or finished) and empty in a job's history, which holds finished
// runs only.
type Run struct {
	State        string          `json:"state"`
	RunID        string          `json:"run_id"`
	Job          string          `json:"job"`
	Attempt      int             `json:"attempt"`
	Trigger      string          `json:"trigger"`
	ScheduledAt  time.Time       `json:"scheduled_at"`
	StartedAt    time.Time       `json:"started_at"`
	EndedAt      time.Time       `json:"ended_at"`
	Holder       string          `json:"holder"`
	Slot         int             `json:"slot"`
	FencingToken int64           `json:"fencing_token"`
	Outcome      string          `json:"outcome"`
	ExitCode     *int            `json:"exit_code"`
	HTTPStatus   int             `json:"http_status"`
	Error        string          `json:"error"`
	Output       string          `json:"output"`
	Input        json.RawMessage `json:"input"`
	// Shards lists the shard runs of a sharded job's tick (GET
	// /api/v1/runs/{tick run id}); empty for any other run.
	Shards []Shard `json:"shards"`

	Raw json.RawMessage `json:"-"`
}

// Shard is one shard run of a tick.
type Shard struct {
	Shard   int    `json:"shard"`
	RunID   string `json:"run_id"`
	State   string `json:"state"`
	Outcome string `json:"outcome"`
}

// Run states of GET /api/v1/runs/{id}.
const (
	StatePending  = "pending"
	StateRunning  = "running"
	StateFinished = "finished"
)

// OutcomeSucceeded is the one outcome a caller waiting for success wants.
const OutcomeSucceeded = "succeeded"

// Triggered is the answer of a trigger: the run's id, and whether an
// earlier trigger with the same idempotency key made it already.
type Triggered struct {
	RunID     string `json:"run_id"`
	Duplicate bool   `json:"duplicate"`

	Raw json.RawMessage `json:"-"`
}

// Cancelled is the answer of a cancel: the request is taken, the run not
// ended yet.
type Cancelled struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`

	Raw json.RawMessage `json:"-"`
}

// Leader is GET /api/v1/leader.
type Leader struct {
	ID       string    `json:"id"`
	APIAddr  string    `json:"api_addr"`
	Since    time.Time `json:"since"`
	Revision int64     `json:"revision"`

	Raw json.RawMessage `json:"-"`
}

// Member is one live replica of GET /api/v1/members.
type Member struct {
	ID         string    `json:"id"`
	APIAddr    string    `json:"api_addr"`
	Version    string    `json:"version"`
	ConfigHash string    `json:"config_hash"`
	StartedAt  time.Time `json:"started_at"`
	IsLeader   bool      `json:"is_leader"`

	Raw json.RawMessage `json:"-"`
}

// Slot is one row of GET /api/v1/slots: a held slot, where exactly one of
// Job and Resource is set (ConcurrencyKey too for a keyed job's slot), or,
// with Window set, a rate window and how much of it is used.
type Slot struct {
	Job            string    `json:"job"`
	ConcurrencyKey string    `json:"concurrency_key"`
	Resource       string    `json:"resource"`
	Slot           int       `json:"slot"`
	RunID          string    `json:"run_id"`
	Holder         string    `json:"holder"`
	FencingToken   int64     `json:"fencing_token"`
	StartedAt      time.Time `json:"started_at"`
	ScheduledAt    time.Time `json:"scheduled_at"`

	Window string    `json:"window"` // "<scope>/<name>", e.g. "job/report"
	Count  int       `json:"count"`  // starts allowed ...
	Per    string    `json:"per"`    // ... in any interval this long
	InUse  int       `json:"in_use"` // starts still counted now
	Oldest time.Time `json:"oldest"` // the oldest start still counted

	Raw json.RawMessage `json:"-"`
}

// Status is GET /api/v1/status: the replica that answered.
type Status struct {
	ID              string    `json:"id"`
	Version         string    `json:"version"`
	IsLeader        bool      `json:"is_leader"`
	ConfigFile      string    `json:"config_file"`
	ConfigHash      string    `json:"config_hash"`
	LastReloadError string    `json:"last_reload_error"`
	LastReloadAt    time.Time `json:"last_reload_at"`
	StartedAt       time.Time `json:"started_at"`
	EtcdEndpoints   []string  `json:"etcd_endpoints"`
	EmbeddedEtcd    bool      `json:"embedded_etcd"`
	// Leader is the leader's id as the replica sees it; empty: none.
	Leader               string         `json:"leader"`
	PendingNotifications int            `json:"pending_notifications"`
	PendingBySink        map[string]int `json:"pending_by_sink"`
	OldestNotification   time.Time      `json:"oldest_notification"`

	Raw json.RawMessage `json:"-"`
}

// keepRaw decodes b into v (a type without this method, so no recursion)
// and keeps a copy of b.
func keepRaw(b []byte, v any, raw *json.RawMessage) error {
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	*raw = append(json.RawMessage(nil), b...)
	return nil
}

// UnmarshalJSON keeps the answer in Raw.
func (j *Job) UnmarshalJSON(b []byte) error {
	type plain Job
	return keepRaw(b, (*plain)(j), &j.Raw)
}

// UnmarshalJSON keeps the answer in Raw.
func (r *Run) UnmarshalJSON(b []byte) error {
	type plain Run
	return keepRaw(b, (*plain)(r), &r.Raw)
}

// UnmarshalJSON keeps the answer in Raw.
func (t *Triggered) UnmarshalJSON(b []byte) error {
	type plain Triggered
	return keepRaw(b, (*plain)(t), &t.Raw)
}

// UnmarshalJSON keeps the answer in Raw.
func (c *Cancelled) UnmarshalJSON(b []byte) error {
	type plain Cancelled
	return keepRaw(b, (*plain)(c), &c.Raw)
}

// UnmarshalJSON keeps the answer in Raw.
func (l *Leader) UnmarshalJSON(b []byte) error {
	type plain Leader
	return keepRaw(b, (*plain)(l), &l.Raw)
}

// UnmarshalJSON keeps the answer in Raw.
func (m *Member) UnmarshalJSON(b []byte) error {
	type plain Member
	return keepRaw(b, (*plain)(m), &m.Raw)
}

// UnmarshalJSON keeps the answer in Raw.
func (s *Slot) UnmarshalJSON(b []byte) error {
	type plain Slot
	return keepRaw(b, (*plain)(s), &s.Raw)
}

// UnmarshalJSON keeps the answer in Raw.
func (s *Status) UnmarshalJSON(b []byte) error {
	type plain Status
	return keepRaw(b, (*plain)(s), &s.Raw)
}
