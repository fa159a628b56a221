package wire

import (
	"encoding/json"
	"time"
)

// TriggerBody is the optional body of POST /api/v1/jobs/{name}/trigger
// (docs/api.md): the run's input, a JSON object that replaces the
// job's default, and a key that makes a repeated trigger answer the first
// one's run.
type TriggerBody struct {
	Input          json.RawMessage `json:"input,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
}

// Triggered is the answer of a trigger: the run's id, and whether an
// earlier trigger with the same idempotency key made it already.
type Triggered struct {
	RunID     string `json:"run_id"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// PauseBody is the optional body of POST /api/v1/jobs/{name}/pause (docs/design-leader.md#a-pause-ends-at-its-until): a reason shown with the job, and an RFC 3339 time at which
// it resumes by itself.
type PauseBody struct {
	Reason string `json:"reason,omitempty"`
	Until  string `json:"until,omitempty"`
}

// CancelBody is the optional body of POST /api/v1/runs/{id}/cancel.
type CancelBody struct {
	Reason string `json:"reason,omitempty"`
}

// Cancelled is the answer of a cancel: the request is taken, the run not
// ended yet.
type Cancelled struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
}

// CancelRequested is Cancelled's Status.
const CancelRequested = "cancel requested"

// BackfillBody is the body of POST /api/v1/jobs/{name}/backfill (docs/operations.md#backfilling): the range [From, To), RFC 3339 times.
type BackfillBody struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Backfill is the answer of a backfill: what became of every tick of
// [From, To), by run id.
type Backfill struct {
	Job  string    `json:"job"`
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Queued: written now, with trigger backfill.
	Queued []string `json:"queued"`
	// SkippedExisting: ran, runs, is queued or was recorded already.
	SkippedExisting []string `json:"skipped_existing"`
	// LeftToSchedule: after the job's cursor; the schedule runs or
	// records them.
	LeftToSchedule []string `json:"left_to_schedule"`
}
