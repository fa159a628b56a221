package wire

import (
	"bytes"
	"encoding/json"
	"time"
)

// Slot is one row of GET /api/v1/slots: a held slot, where exactly one of
// Job and Resource is set (ConcurrencyKey too for a keyed job's slot), or,
// with Window set, a rate window's row, which carries only the window's
// fields.
type Slot struct {
	Job            string    `json:"job,omitempty"`
	Team           string    `json:"team,omitempty"` // the job's team (docs/configuration.md, "Teams and tokens")
	ConcurrencyKey string    `json:"concurrency_key,omitempty"`
	Resource       string    `json:"resource,omitempty"`
	Slot           int       `json:"slot"`
	RunID          string    `json:"run_id"`
	Holder         string    `json:"holder"`
	FencingToken   int64     `json:"fencing_token"`
	StartedAt      time.Time `json:"started_at"`
	ScheduledAt    time.Time `json:"scheduled_at"`
	Window         *Window   `json:"-"`
}

// Window is one rate window and how much of it is used.
type Window struct {
	Window string    `json:"window"`          // "<scope>/<name>", e.g. "job/report"
	Count  int       `json:"count"`           // starts allowed ...
	Per    string    `json:"per"`             // ... in any interval this long
	InUse  int       `json:"in_use"`          // starts still counted now
	Oldest time.Time `json:"oldest,omitzero"` // the oldest start still counted
}

// MarshalJSON writes a slot's fields, or a window's.
func (s Slot) MarshalJSON() ([]byte, error) {
	if s.Window != nil {
		return json.Marshal(s.Window)
	}
	type plain Slot
	return json.Marshal(plain(s))
}

// UnmarshalJSON reads a row with a "window" as a window's, any other as a
// slot's.
func (s *Slot) UnmarshalJSON(b []byte) error {
	var probe struct {
		Window json.RawMessage `json:"window"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if len(probe.Window) > 0 && !bytes.Equal(probe.Window, []byte("null")) {
		var w Window
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		*s = Slot{Window: &w}
		return nil
	}
	type plain Slot
	return json.Unmarshal(b, (*plain)(s))
}
