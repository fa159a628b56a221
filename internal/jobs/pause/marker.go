// Package pause is a job's pause in etcd (jobs/<job>/paused, docs/design-leader.md#a-pause-ends-at-its-until): the marker an operator's pause, a resume or pause_on_failure
// writes, its encoding (read by earlier versions too), and the view every
// replica keeps of the markers.
package pause

import (
	"bytes"
	"encoding/json"
	"time"
)

// Marker is a job's pause as stored at jobs/<job>/paused (docs/design-leader.md#a-pause-ends-at-its-until):
// written by a pause, "false" after a resume of a job whose file says
// paused, deleted otherwise.
type Marker struct {
	Paused bool `json:"paused"`
	// Reason is what the operator said, shown by the API, CLI and
	// dashboard.
	Reason string `json:"reason,omitempty"`
	// At is when the pause was asked for.
	At time.Time `json:"at,omitzero"`
	// Until, when set, ends the pause: past it the job counts as resumed
	// everywhere, and the leader deletes the marker (package leader,
	// resume.go).
	Until time.Time `json:"until,omitzero"`
}

// Resumed is the stored value of a resume that must win over the file's
// paused: true; earlier versions read it too.
const Resumed = "false"

// Encode is the stored value of a pause. Earlier versions read any
// value but "false" as paused, so they honour it (without its until).
func Encode(p Marker) string {
	p.Paused = true
	b, _ := json.Marshal(p) // a struct of strings and times: cannot fail
	return string(b)
}

// Decode reads a stored value: this version's JSON, or the bare
// "true"/"false" earlier versions wrote. Anything else counts as paused,
// as it did before.
func Decode(v []byte) Marker {
	v = bytes.TrimSpace(v)
	if string(v) == Resumed {
		return Marker{}
	}
	var p Marker
	if len(v) > 0 && v[0] == '{' && json.Unmarshal(v, &p) == nil {
		return p
	}
	return Marker{Paused: true}
}

// ActiveAt reports whether the pause holds at now: paused, and now before
// its until, if it has one.
func (p Marker) ActiveAt(now time.Time) bool {
	return p.Paused && (p.Until.IsZero() || now.Before(p.Until))
}
