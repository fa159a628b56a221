package queue

import (
	"testing"
	"time"
)

// The pause marker's value: this version's JSON, and what earlier
// versions wrote (bare "true" after a pause, "false" after a resume of a
// job paused in its file), which must keep meaning what it meant.
func TestDecodePause(t *testing.T) {
	until := time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		value string
		want  Pause
	}{
		{"true", Pause{Paused: true}},
		{"false", Pause{}},
		{"yes", Pause{Paused: true}}, // anything but "false" was a pause
		{EncodePause(Pause{Reason: "freeze", Until: until}), Pause{Paused: true, Reason: "freeze", Until: until}},
		{EncodePause(Pause{}), Pause{Paused: true}},
	} {
		if got := DecodePause([]byte(c.value)); got != c.want {
			t.Errorf("DecodePause(%s) = %+v, want %+v", c.value, got, c.want)
		}
	}
}
