// Package wire holds the JSON bodies of the HTTP API (docs/api.md): the
// one definition the server fills and the client decodes, so a field
// added, renamed or tagged differently shows on both sides at once.
//
// It is a leaf: it imports only the standard library and the packages
// whose values travel whole (config's job declaration, runs' record), so
// every layer that fills a body (election, slots, jobs, backfill, api) and
// the client can import it without a cycle and without pulling in etcd.
// The server packages name these types with aliases where they produce
// them (jobs.JobStatus is wire.Job). Field names and tags are the API's
// contract (docs/api.md); wire_test.go pins them.
package wire

import (
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Run is one run as GET /api/v1/runs/{id} shows it: queued ("pending"),
// executing ("running") or recorded ("finished"), with its record as far
// as it goes. A job's history (GET /api/v1/jobs/{name}/runs) lists bare
// records, without State.
type Run struct {
	State string `json:"state"`
	runs.Record
	// Shards is set for a tick of a sharded job (docs/design-sharded.md): its
	// outcome is the tick's, once every shard ended.
	Shards []Shard `json:"shards,omitempty"`
}

// Shard is one shard run of a sharded job's tick, as the tick's view
// lists it.
type Shard struct {
	Shard   int          `json:"shard"`
	RunID   string       `json:"run_id"`
	State   string       `json:"state"` // pending, running, finished; unknown when neither queued nor recorded
	Outcome runs.Outcome `json:"outcome,omitempty"`
	// Attempt is the attempt the state is of: the newest, so a shard
	// lost and retried shows its retry.
	Attempt int `json:"attempt,omitempty"`
}

// Run states of GET /api/v1/runs/{id}.
const (
	StatePending  = "pending"
	StateRunning  = "running"
	StateFinished = "finished"
)

// Job is a job as the API shows it (GET /api/v1/jobs, /api/v1/jobs/{name},
// and the answers of pause and resume).
type Job struct {
	Name string `json:"name"`
	// Team owns the job: the team of the file it is declared in, empty
	// for the main file's jobs (docs/configuration.md, "Teams and tokens").
	Team   string     `json:"team"`
	Spec   config.Job `json:"spec"`
	Paused bool       `json:"paused"`
	// PauseReason, PausedAt and PausedUntil describe a pause made through
	// the API (a pause from the file has none): the job resumes by itself
	// at PausedUntil.
	PauseReason    string       `json:"pause_reason,omitempty"`
	PausedAt       time.Time    `json:"paused_at,omitzero"`
	PausedUntil    time.Time    `json:"paused_until,omitzero"`
	NextRun        time.Time    `json:"next_run,omitzero"`
	LastRun        *runs.Record `json:"last_run,omitempty"`
	Running        int          `json:"running"`
	MaxConcurrency int          `json:"max_concurrency"`
	// Shards is a sharded job's shard runs a tick (docs/design-sharded.md).
	Shards int `json:"shards,omitempty"`
	// Pending counts the job's runs that are due and wait to start (for
	// a slot, a rate window, their turn); Scheduled its runs queued ahead
	// of their due time (the leader materializes ticks seconds ahead, so
	// a leader's death costs none: package leader, lookahead.go).
	Pending   int `json:"pending"`
	Scheduled int `json:"scheduled"`
	// After is the job this one is chained after (docs/notify.md#chains).
	After *config.After `json:"after,omitempty"`
	// PendingNotifications are the job's notifications not yet delivered.
	PendingNotifications int `json:"pending_notifications"`
	// RemainingRuns is, for a job with max_runs, how many scheduled runs
	// it has left (docs/configuration.md#jobs); absent without max_runs.
	RemainingRuns *int `json:"remaining_runs,omitempty"`
	// Overdue is true while the job's newest overdue tick has not
	// succeeded nor a later one (docs/operations.md#overdue);
	// LastSucceededAt is when its last succeeded run ended (absent: none
	// known).
	Overdue         bool      `json:"overdue"`
	LastSucceededAt time.Time `json:"last_succeeded_at,omitzero"`
}

// RemovedJob is a job gone from the config whose history is kept until
// removed_history_ttl after RemovedAt (GET /api/v1/jobs?removed=true).
type RemovedJob struct {
	Name      string    `json:"name"`
	RemovedAt time.Time `json:"removed_at"`
}
