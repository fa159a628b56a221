package schedule

import (
	"fmt"
	"time"
)

// MinEvery is the shortest "@every" interval. Below it the tick rate would
// be bounded by etcd round trips rather than by the schedule.
const MinEvery = 100 * time.Millisecond

// Every ticks at whole multiples of Interval since the Unix epoch. Aligning
// to the epoch, not to the moment a leader started, is what lets a new
// leader compute exactly the ticks the old one did.
type Every struct {
	Interval time.Duration
}

func parseEvery(s string) (Every, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return Every{}, fmt.Errorf("@every: invalid duration %q", s)
	}
	if d < MinEvery {
		return Every{}, fmt.Errorf("@every %s: must be at least %s", s, MinEvery)
	}
	// Ticks are computed in milliseconds, which keeps the arithmetic exact
	// for any date time.Time can hold.
	if d%time.Millisecond != 0 {
		return Every{}, fmt.Errorf("@every %s: must be a whole number of milliseconds", s)
	}
	return Every{Interval: d}, nil
}

// Next returns the first multiple of Interval after t.
func (e Every) Next(t time.Time) time.Time {
	step := e.Interval.Milliseconds()
	if step <= 0 {
		return time.Time{}
	}
	// UnixMilli rounds toward minus infinity, so a t with a sub-millisecond
	// part still lands in the right interval.
	ms := t.UnixMilli()
	q := ms / step
	if ms%step < 0 {
		q--
	}
	return time.UnixMilli((q + 1) * step).In(t.Location())
}

func (e Every) String() string { return "@every " + e.Interval.String() }
