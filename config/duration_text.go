package config

import (
	"strings"
	"time"
)

// ShortDuration writes d as the docs and config files do: "1m", "1h30m",
// "2s", not Go's "1m0s" and "1h30m0s".
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
