package runs

import (
	"testing"
	"time"
)

func TestID(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC), "nightly-report@2026-11-22T01:00:00Z"},
		{time.Date(2026, 11, 22, 2, 0, 0, 0, berlin), "nightly-report@2026-11-22T01:00:00Z"},
		{time.Date(2026, 11, 22, 1, 0, 0, 500_000_000, time.UTC), "nightly-report@2026-11-22T01:00:00.5Z"},
	} {
		if got := ID("nightly-report", tc.at); got != tc.want {
			t.Errorf("ID(%v) = %q, want %q", tc.at, got, tc.want)
		}
		if got := JobOf(tc.want); got != "nightly-report" {
			t.Errorf("JobOf(%q) = %q", tc.want, got)
		}
	}
}
