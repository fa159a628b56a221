package config

import (
	"testing"
	"time"
)

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute: "1m", time.Hour: "1h", 90 * time.Minute: "1h30m", 90 * time.Second: "1m30s",
		2 * time.Second: "2s", 1500 * time.Millisecond: "1.5s", time.Hour + time.Second: "1h0m1s", 0: "0s",
	} {
		if got := ShortDuration(d); got != want {
			t.Errorf("ShortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
