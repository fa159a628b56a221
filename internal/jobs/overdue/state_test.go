package overdue

import (
	"testing"
	"time"
)

// A last success is stored as Encode (encoding/json) writes it.
func TestSucceededEncodesAsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	for _, s := range []Succeeded{
		{},
		{RunID: "nightly@2026-11-30T04:00:00Z", ScheduledAt: at, EndedAt: at.Add(1500 * time.Millisecond)},
		{RunID: "a&b", ScheduledAt: at.In(time.FixedZone("x", 3600)), EndedAt: at.Add(1)},
	} {
		if got, want := s.Encode(), Encode(s); got != want {
			t.Errorf("Encode() = %s\nwant       %s", got, want)
		}
	}
}
