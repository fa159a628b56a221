// Package runs names what a run is and how it ended: the record of docs/api.md that workers and the leader write, the API serves and tests check.
package runs

import (
	"encoding/json"
	"strings"
	"time"
)

// Outcome is how a run ended.
type Outcome string

const (
	Succeeded Outcome = "succeeded"
	Failed    Outcome = "failed"
	TimedOut  Outcome = "timed_out"
	Cancelled Outcome = "cancelled"
	Lost      Outcome = "lost"    // holder died holding the slot
	Skipped   Outcome = "skipped" // overlap: every slot was taken
	Missed    Outcome = "missed"  // past starting_deadline, never started
	// Interrupted: its replica shut down (SIGTERM) and the shutdown grace
	// ended before the run did; it is queued again at once, without using
	// a retry, up to worker.max_interruptions times (docs/design-run-end.md#a-graceful-shutdown-requeues-what-it-cuts).
	Interrupted Outcome = "interrupted"
)

// Retryable reports whether a retry may follow this outcome.
func (o Outcome) Retryable() bool {
	return o == Failed || o == TimedOut || o == Lost
}

// Interruptions counts the attempts in previous that were interrupted:
// they used none of the run's retries.
func Interruptions(previous []Attempt) int {
	n := 0
	for _, a := range previous {
		if a.Outcome == Interrupted {
			n++
		}
	}
	return n
}

// Trigger is what created a run.
type Trigger string

const (
	Schedule Trigger = "schedule"
	Manual   Trigger = "manual"
	Retry    Trigger = "retry"
	// Chain: queued by the end of a run of the job it is chained after.
	Chain Trigger = "chain"
	// Backfill: a past tick queued by a backfill (docs/operations.md#backfilling), under
	// its scheduled run id; its starting deadline does not apply.
	Backfill Trigger = "backfill"
)

// Record is a finished run, stored at runs/<job>/<run-id>.
type Record struct {
	RunID string `json:"run_id"`
	Job   string `json:"job"`
	// Team is the job's team as the API answers it; records in etcd
	// leave it out (the API fills it in from the config).
	Team         string    `json:"team,omitempty"`
	Attempt      int       `json:"attempt"`
	Trigger      Trigger   `json:"trigger"`
	ScheduledAt  time.Time `json:"scheduled_at"`
	StartedAt    time.Time `json:"started_at,omitzero"`
	EndedAt      time.Time `json:"ended_at,omitzero"`
	Holder       string    `json:"holder,omitempty"`
	Slot         int       `json:"slot"`
	FencingToken int64     `json:"fencing_token,omitempty"`
	Outcome      Outcome   `json:"outcome"`
	ExitCode     *int      `json:"exit_code,omitempty"`
	HTTPStatus   int       `json:"http_status,omitempty"`
	Error        string    `json:"error,omitempty"`
	Output       string    `json:"output,omitempty"`
	// Input is what the run was given (a trigger's input, or its
	// upstream's when chained).
	Input json.RawMessage `json:"input,omitempty"`
	// UpstreamRunID is the run whose end queued this one (trigger chain).
	UpstreamRunID string `json:"upstream_run_id,omitempty"`
	// Previous lists the attempts before this one: a retry keeps the run
	// id, so its record replaces theirs at the same key.
	Previous []Attempt `json:"previous_attempts,omitempty"`
	// ConcurrencyKey is the key whose slot the run held or waited for.
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
}

// Attempt summarizes one earlier attempt of a run.
type Attempt struct {
	Attempt      int       `json:"attempt"`
	Outcome      Outcome   `json:"outcome"`
	Holder       string    `json:"holder,omitempty"`
	FencingToken int64     `json:"fencing_token,omitempty"`
	StartedAt    time.Time `json:"started_at,omitzero"`
	EndedAt      time.Time `json:"ended_at,omitzero"`
	Error        string    `json:"error,omitempty"`
}

// Summary is the record as an earlier attempt of its retry.
func (r *Record) Summary() Attempt {
	return Attempt{Attempt: r.Attempt, Outcome: r.Outcome, Holder: r.Holder, FencingToken: r.FencingToken,
		StartedAt: r.StartedAt, EndedAt: r.EndedAt, Error: r.Error}
}

// TimeFormat is how scheduled times appear in run ids and headers:
// RFC 3339 with nanoseconds, trailing zeros dropped, always UTC.
const TimeFormat = time.RFC3339Nano

// ID is the deterministic id of a scheduled run: <job>@<scheduled_at>.
func ID(job string, scheduledAt time.Time) string {
	return job + "@" + scheduledAt.UTC().Format(TimeFormat)
}

// ManualID is the id of a manually triggered run, made from a unique suffix
// (a ULID).
func ManualID(job, unique string) string {
	return job + "@manual-" + unique
}

// IdempotentID is the id of a run triggered with an idempotency key: the
// same key names the same run, so a repeated trigger finds it.
func IdempotentID(job, key string) string {
	return job + "@key-" + key
}

// ChainID is the id of the run of job queued by the end of upstream: one
// upstream run can queue at most one run of each job chained after it,
// however often its end is written.
func ChainID(job, upstream string) string {
	return job + "@chain-" + upstream
}

// JobOf returns the job part of a run id.
func JobOf(runID string) string {
	job, _, _ := strings.Cut(runID, "@")
	return job
}

// OutputLimit is how much output a record keeps: the last 4 KiB.
const OutputLimit = 4 << 10
