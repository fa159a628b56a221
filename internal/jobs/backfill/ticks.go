package backfill

import (
	"time"

	"github.com/etcdsched/scheduler/internal/schedule"
)

// ticks are sched's ticks in [from, to), at most limit of them; when there
// are more, next is the first left out (the list holds the first limit).
func ticks(sched schedule.Schedule, from, to time.Time, limit int) (out []time.Time, next time.Time) {
	// Next is strictly after its argument: start just before from, so a
	// tick at from is in.
	for t := sched.Next(from.Add(-time.Nanosecond)); !t.IsZero() && t.Before(to); t = sched.Next(t) {
		if len(out) == limit {
			return out, t
		}
		out = append(out, t)
	}
	return out, time.Time{}
}
