package jobstest

import (
	"testing"
	"time"
)

// FarTick's schedule has no tick within ten minutes of the now it was made
// at, whatever the hour (an @every 1h job has one at every whole hour, so
// a test's late run was superseded across one).
func TestFarTickDoesNotTickNearNow(t *testing.T) {
	for _, now := range []time.Time{
		time.Date(2026, 11, 30, 15, 59, 58, 0, time.UTC),
		time.Date(2026, 11, 30, 16, 0, 1, 0, time.UTC),
		time.Date(2026, 11, 30, 16, 29, 59, 0, time.UTC),
		time.Date(2026, 11, 30, 16, 31, 0, 0, time.UTC),
		time.Date(2026, 11, 30, 17, 45, 30, 0, time.FixedZone("UTC+5:30", 5*3600+1800)),
	} {
		j := WithDefaults(Job("x", FarTick(now)))
		sched, err := j.ParsedSchedule()
		if err != nil {
			t.Fatalf("made at %s: %q: %v", now.Format(time.TimeOnly), FarTick(now), err)
		}
		if next := sched.Next(now.Add(-10 * time.Minute)); next.Before(now.Add(10 * time.Minute)) {
			t.Errorf("made at %s (%q): a tick at %s", now.Format(time.TimeOnly), FarTick(now), next.Format(time.TimeOnly))
		}
	}
}
