package schedule

import (
	"testing"
	"time"
)

// BenchmarkNext is the next-fire computation the leader makes for every
// job at every pass (twice: the tick and the wake after it) and the API for
// every listed job.
func BenchmarkNext(b *testing.B) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		b.Skip(err)
	}
	from := time.Date(2026, 11, 21, 20, 59, 13, 0, time.UTC)
	for _, c := range []struct {
		name, spec string
		loc        *time.Location
	}{
		{"every-1s", "@every 1s", time.UTC},
		{"every-90m", "@every 90m", time.UTC},
		{"cron-hourly", "17 * * * *", time.UTC},
		{"cron-seconds", "*/5 * * * * *", time.UTC},
		{"cron-weekdays-berlin", "30 2 * * mon-fri", berlin},
		{"cron-leap-day", "0 0 29 2 *", time.UTC},
	} {
		s, err := Parse(c.spec, c.loc)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			t := from
			for b.Loop() {
				t = s.Next(t)
				if t.Year() > 2400 {
					t = from
				}
			}
		})
	}
}
