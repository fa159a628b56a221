package pause

import (
	"testing"
	"time"
)

// The pause marker's value: this version's JSON, and what earlier
// versions wrote (bare "true" after a pause, "false" after a resume of a
// job paused in its file), which must keep meaning what it meant.
func TestDecode(t *testing.T) {
	until := time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		value string
		want  Marker
	}{
		{"true", Marker{Paused: true}},
		{"false", Marker{}},
		{"yes", Marker{Paused: true}}, // anything but "false" was a pause
		{Encode(Marker{Reason: "freeze", Until: until}), Marker{Paused: true, Reason: "freeze", Until: until}},
		{Encode(Marker{}), Marker{Paused: true}},
	} {
		if got := Decode([]byte(c.value)); got != c.want {
			t.Errorf("Decode(%s) = %+v, want %+v", c.value, got, c.want)
		}
	}
}
