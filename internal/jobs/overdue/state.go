// Package overdue is what etcd stores of a job's overdue ticks and last
// success (docs/operations.md#overdue, docs/protocol.md#overdue): the
// values of jobs/<job>/overdue and succeeded/<job>, the judgement of one
// tick from what etcd holds of it, the view every replica keeps of the
// first, and the read of the second when asked (Last), from which the API
// and the gauges answer alike on every replica.
package overdue

import (
	"encoding/json"
	"time"

	"github.com/etcdsched/scheduler/internal/jsonappend"
	"github.com/etcdsched/scheduler/internal/runs"
)

// Succeeded is a job's last succeeded run, as succeeded/<job> holds it.
type Succeeded struct {
	RunID       string    `json:"run_id"`
	ScheduledAt time.Time `json:"scheduled_at"`
	EndedAt     time.Time `json:"ended_at"`
}

// SucceededOf is rec's value at succeeded/<job>.
func SucceededOf(rec *runs.Record) Succeeded {
	return Succeeded{RunID: rec.RunID, ScheduledAt: rec.ScheduledAt.UTC(), EndedAt: rec.EndedAt.UTC()}
}

// Encode is s as stored: what Encode writes for it, without reflection
// (a succeeded run's end writes one).
func (s Succeeded) Encode() string {
	b := make([]byte, 0, 16+len(s.RunID)+2*len(time.RFC3339Nano)+40)
	b = append(b, '{')
	b = jsonappend.String(jsonappend.Field(b, "run_id"), s.RunID)
	b = jsonappend.Time(jsonappend.Field(b, "scheduled_at"), s.ScheduledAt)
	b = jsonappend.Time(jsonappend.Field(b, "ended_at"), s.EndedAt)
	return string(append(b, '}'))
}

// State is a job's overdue state, as jobs/<job>/overdue holds it: the
// leader has judged every tick scheduled up to Through; Tick, when set,
// is the newest of them it found overdue.
type State struct {
	Through time.Time `json:"through"`
	Tick    *Tick     `json:"tick,omitempty"`
}

// Tick is one overdue tick: its run id, scheduled time, what it was at
// its due time (Outcome: running, queued, failed... or never started) and
// when the leader found it overdue.
type Tick struct {
	RunID       string    `json:"run_id"`
	ScheduledAt time.Time `json:"scheduled_at"`
	Outcome     string    `json:"outcome"`
	At          time.Time `json:"at"`
}

// Encode is v as stored.
func Encode(v any) string {
	b, _ := json.Marshal(v) // strings and times: cannot fail
	return string(b)
}

// Decode reads a stored value into v; false when it does not decode.
func Decode[T any](b []byte) (T, bool) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err == nil
}

// IsOverdue reports whether a job whose state is s and whose last success
// is last counts as overdue: a tick was found overdue and no run of that
// tick or a later one has succeeded since (scheduler_job_overdue).
func IsOverdue(s State, last *Succeeded) bool {
	if s.Tick == nil {
		return false
	}
	return last == nil || last.ScheduledAt.Before(s.Tick.ScheduledAt)
}
