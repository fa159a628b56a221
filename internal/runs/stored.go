package runs

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/internal/jsonappend"
)

// A record is stored at runs/<job>/<run-id> without what its run id and
// the defaults already say: the job (the run id's prefix), scheduled_at
// when the run id is a scheduled run's (ID), attempt 1, trigger
// "schedule" and slot 0. DecodeRecord puts them back, so a decoded record
// is the record that was encoded, and the API, the notifications and the
// CLI show it as before: the compact form is only the stored one.

// stored is the stored form: its fields hide Record's of the same JSON
// name (the less nested field wins), and omit their value when it is the
// one DecodeRecord restores. Every other field is Record's own.
type stored struct {
	Record
	Job         string    `json:"job,omitempty"`
	Attempt     int       `json:"attempt,omitempty"`
	Trigger     Trigger   `json:"trigger,omitempty"`
	ScheduledAt time.Time `json:"scheduled_at,omitzero"`
	Slot        int       `json:"slot,omitempty"`
}

// EncodeRecord is r as stored.
func EncodeRecord(r *Record) string {
	s := storedOf(r)
	if len(r.Input) == 0 && len(r.Previous) == 0 {
		return string(s.appendTo(make([]byte, 0, 256+len(r.Output)+len(r.Error))))
	}
	// Input is raw JSON, which encoding/json compacts and escapes, and
	// the earlier attempts are a list: those records take its path.
	b, err := json.Marshal(&s)
	if err != nil {
		// Every field is plain data; this cannot fail.
		panic(fmt.Sprintf("runs: encode record: %v", err))
	}
	return string(b)
}

// storedOf is r's stored form: what its run id and the defaults say left out.
func storedOf(r *Record) stored {
	s := stored{Record: *r, Slot: r.Slot}
	if r.Job != JobOf(r.RunID) {
		s.Job = r.Job
	}
	if r.Attempt != 1 {
		s.Attempt = r.Attempt
	}
	if r.Trigger != Schedule {
		s.Trigger = r.Trigger
	}
	if at, ok := ScheduledAtOf(r.RunID); !ok || !at.Equal(r.ScheduledAt) || r.ScheduledAt.Location() != time.UTC {
		s.ScheduledAt = r.ScheduledAt
	}
	return s
}

// appendTo writes s without Input and Previous as encoding/json writes
// it (its differential test: TestEncodeRecordWritesWhatEncodingJSONWrites):
// Record's fields in their order, then stored's own, which hide Record's
// of the same name.
func (s *stored) appendTo(b []byte) []byte {
	b = append(b, '{')
	b = jsonappend.String(jsonappend.Field(b, "run_id"), s.RunID)
	b = optString(b, "team", s.Team)
	b = optTime(b, "started_at", s.StartedAt)
	b = optTime(b, "ended_at", s.EndedAt)
	b = optString(b, "holder", s.Holder)
	b = optInt(b, "fencing_token", s.FencingToken)
	b = jsonappend.String(jsonappend.Field(b, "outcome"), string(s.Outcome))
	if s.ExitCode != nil {
		b = jsonappend.Int(jsonappend.Field(b, "exit_code"), int64(*s.ExitCode))
	}
	b = optInt(b, "http_status", int64(s.HTTPStatus))
	b = optString(b, "error", s.Error)
	b = optString(b, "output", s.Output)
	b = optString(b, "upstream_run_id", s.UpstreamRunID)
	b = optString(b, "concurrency_key", s.ConcurrencyKey)
	b = optString(b, "job", s.Job)
	b = optInt(b, "attempt", int64(s.Attempt))
	b = optString(b, "trigger", string(s.Trigger))
	b = optTime(b, "scheduled_at", s.ScheduledAt)
	b = optInt(b, "slot", int64(s.Slot))
	return append(b, '}')
}

func optString(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	return jsonappend.String(jsonappend.Field(b, name), v)
}

func optInt(b []byte, name string, v int64) []byte {
	if v == 0 {
		return b
	}
	return jsonappend.Int(jsonappend.Field(b, name), v)
}

func optTime(b []byte, name string, v time.Time) []byte {
	if v.IsZero() {
		return b
	}
	return jsonappend.Time(jsonappend.Field(b, name), v)
}

// DecodeRecord reads a stored record, compact or written in full (by an
// older version, or an outbox copy).
func DecodeRecord(b []byte) (Record, error) {
	var s stored
	if err := json.Unmarshal(b, &s); err != nil {
		return Record{}, fmt.Errorf("runs: decode record: %w", err)
	}
	r := s.Record
	r.Job, r.Attempt, r.Trigger, r.ScheduledAt, r.Slot = s.Job, s.Attempt, s.Trigger, s.ScheduledAt, s.Slot
	if r.Job == "" {
		r.Job = JobOf(r.RunID)
	}
	if r.Attempt == 0 {
		r.Attempt = 1
	}
	if r.Trigger == "" {
		r.Trigger = Schedule
	}
	if r.ScheduledAt.IsZero() {
		r.ScheduledAt, _ = ScheduledAtOf(r.RunID)
	}
	return r, nil
}

// ScheduledAtOf is the time a scheduled run's id (ID) names; ok is false
// for the id of a manual, keyed or chained run.
func ScheduledAtOf(runID string) (time.Time, bool) {
	if tick, _, ok := ShardOf(runID); ok {
		runID = tick // a shard of a tick is scheduled at the tick
	}
	job, at, found := strings.Cut(runID, "@")
	if !found {
		return time.Time{}, false
	}
	t, err := time.Parse(TimeFormat, at)
	if err != nil || ID(job, t) != runID {
		return time.Time{}, false
	}
	return t.UTC(), true
}
