// Package notify is what a notification is and how it reaches a sink: the
// value stored in the outbox (docs/notify.md#notify), its deterministic id, the
// body of each format and the POST. It knows nothing of etcd: the outbox
// is written by the records' transactions (jobs/follow) and drained by the
// leader (jobs/leader).
package notify

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
)

// HeaderID carries the notification's id, the same on every retry, so a
// receiver can drop repeats.
const HeaderID = "X-Scheduler-Notification-Id"

// Notification is one event of one run for one sink, as stored in the
// outbox until delivered or dropped.
type Notification struct {
	ID    string `json:"id"`
	Sink  string `json:"sink"`
	Event string `json:"event"`
	// CreatedAt is when the record that caused it was written; max_age
	// counts from here.
	CreatedAt time.Time   `json:"created_at"`
	Record    runs.Record `json:"record"`
	// Overdue is set on an "overdue" notification: the tick is Record
	// (its run id, job and scheduled time), this says what became of it.
	Overdue *Overdue `json:"overdue,omitempty"`
}

// Overdue is what an "overdue" notification says of its tick
// (docs/operations.md#overdue): what it was when it fell due, when that
// was, and the job's last succeeded run before (empty: none known).
type Overdue struct {
	Outcome              string    `json:"outcome"`
	DueAt                time.Time `json:"due_at"`
	LastSucceededRunID   string    `json:"last_succeeded_run_id,omitempty"`
	LastSucceededEndedAt time.Time `json:"last_succeeded_at,omitzero"`
}

// ID is the notification id of event for the attempt of runID: derived
// from what the record says, so a release repeated, read back or recorded
// by a new leader cannot give one event two ids.
func ID(runID string, attempt int, event string) string {
	return runID + "#" + strconv.Itoa(attempt) + ":" + event
}

// New is the notification of event for rec, to sink.
func New(sink, event string, rec *runs.Record, now time.Time) *Notification {
	return &Notification{ID: ID(rec.RunID, rec.Attempt, event), Sink: sink, Event: event, CreatedAt: now.UTC(), Record: *rec}
}

// Encode is the notification as stored.
func (n *Notification) Encode() string {
	b, err := json.Marshal(n)
	if err != nil {
		panic(fmt.Sprintf("notify: encode: %v", err)) // plain data: cannot fail
	}
	return string(b)
}

// Decode reads a stored notification.
func Decode(b []byte) (*Notification, error) {
	var n Notification
	if err := json.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("notify: decode: %w", err)
	}
	return &n, nil
}
