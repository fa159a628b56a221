package schedule

import (
	"errors"
	"fmt"
	"time"
)

// Union is the schedule of a job with several schedules, exclusions and an
// active period: the ticks of any of its schedules, one tick per instant,
// at or after start, before end, and not excluded. Like every Schedule it
// is a pure function of time, so the leader's lookahead, catch-up,
// starting_deadline and daylight-saving rules apply to it unchanged.
type Union struct {
	schedules  []Schedule
	exclusions []Exclusion
	start, end time.Time // zero: unbounded
	// finite is the end of the last date or range an exclusion names.
	finite time.Time
}

// MaxCandidates bounds the ticks one Next call looks at (excluded ones
// count, a stretch an exclusion skips whole counts once): past it Next
// reports no tick rather than searching without end.
const MaxCandidates = 100_000

// CheckYears is the horizon of Check.
const CheckYears = 5

// NewUnion combines schedules; start and end, when not zero, bound the
// ticks to [start, end).
func NewUnion(schedules []Schedule, exclusions []Exclusion, start, end time.Time) (*Union, error) {
	if len(schedules) == 0 {
		return nil, errors.New("union: no schedules")
	}
	if !start.IsZero() && !end.IsZero() && !end.After(start) {
		return nil, fmt.Errorf("union: end %s is not after start %s", end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	u := &Union{schedules: schedules, exclusions: exclusions, start: start, end: end}
	for _, e := range exclusions {
		if f, ok := e.(interface{ end() time.Time }); ok && f.end().After(u.finite) {
			u.finite = f.end()
		}
	}
	return u, nil
}

// Next returns the first tick strictly after t that is not excluded, or
// the zero time if there is none. The search is bounded: MaxCandidates
// candidate ticks, and CheckYears past the later of t and the end of the
// last date or range an exclusion names (beyond those only exclusions by
// cron remain, and they recur within that time).
func (u *Union) Next(t time.Time) time.Time {
	horizon := later(t, u.finite).AddDate(CheckYears, 0, 0)
	at, _ := u.next(t, horizon)
	return at.In(t.Location())
}

// next searches up to MaxCandidates candidates and no further than
// horizon. It returns the tick and the candidates seen.
func (u *Union) next(t, horizon time.Time) (time.Time, int) {
	if !u.start.IsZero() && t.Before(u.start) {
		t = u.start.Add(-time.Nanosecond)
	}
	for n := 1; n <= MaxCandidates; n++ {
		c := u.candidate(t)
		if c.IsZero() || (!u.end.IsZero() && !c.Before(u.end)) || c.After(horizon) {
			return time.Time{}, n
		}
		until, rule := u.excluded(c)
		if rule == nil {
			return c, n
		}
		// A stretch always ends after the tick it holds, but a zone whose
		// clock goes back across midnight could make a calendar day end
		// "before" a tick late in it: never search backwards.
		t = later(until.Add(-time.Nanosecond), c)
	}
	return time.Time{}, MaxCandidates
}

// candidate is the first tick after t of any schedule, exclusions aside:
// the earliest wins, so the same instant from two schedules is one tick.
func (u *Union) candidate(t time.Time) time.Time {
	var first time.Time
	for _, s := range u.schedules {
		if n := s.Next(t); !n.IsZero() && (first.IsZero() || n.Before(first)) {
			first = n
		}
	}
	return first
}

// excluded returns the first rule that excludes t and the end of the
// stretch it excludes; a nil rule when t fires.
func (u *Union) excluded(t time.Time) (time.Time, Exclusion) {
	for _, e := range u.exclusions {
		if until, ok := e.Until(t); ok {
			return until, e
		}
	}
	return time.Time{}, nil
}

// Tick is a candidate tick and, when it does not fire, the rule that
// excluded it.
type Tick struct {
	At         time.Time
	ExcludedBy string // empty: the tick fires
}

// MaxExplained bounds the excluded ticks Explain lists.
const MaxExplained = 1000

// Explain lists the candidate ticks after t until n of them fire, and
// none after until when until is set: the ones that fire and, between
// them, the excluded ones with the rule that excluded each (the first in
// the list that matches). It lists at most MaxExplained excluded ticks.
func (u *Union) Explain(t time.Time, n int, until time.Time) []Tick {
	loc := t.Location()
	if !u.start.IsZero() && t.Before(u.start) {
		t = u.start.Add(-time.Nanosecond)
	}
	var out []Tick
	for fired, excluded := 0, 0; fired < n && excluded < MaxExplained; {
		c := u.candidate(t)
		if c.IsZero() || (!u.end.IsZero() && !c.Before(u.end)) || (!until.IsZero() && c.After(until)) {
			break
		}
		tick := Tick{At: c.In(loc)}
		if _, rule := u.excluded(c); rule != nil {
			tick.ExcludedBy = rule.String()
			excluded++
		} else {
			fired++
		}
		out = append(out, tick)
		t = c
	}
	return out
}

// Check reports an error when the union never fires within CheckYears or
// MaxCandidates candidate ticks, whichever comes first, of the start of
// its active period. Without a start the search begins CheckYears before
// the end; without either, after the last date or range an exclusion
// names (its exclusions by cron recur, so that stretch stands for all).
func (u *Union) Check() error {
	from := u.checkFrom()
	horizon := from.AddDate(CheckYears, 0, 0)
	at, n := u.next(from.Add(-time.Nanosecond), horizon)
	if !at.IsZero() {
		return nil
	}
	switch {
	case n >= MaxCandidates && from.Equal(checkReference):
		return fmt.Errorf("never fires: its first %d ticks are all excluded", MaxCandidates)
	case n >= MaxCandidates:
		return fmt.Errorf("never fires: its first %d ticks from %s are all excluded", MaxCandidates, from.Format(time.RFC3339))
	case !u.end.IsZero() && u.end.Before(horizon):
		return fmt.Errorf("never fires between %s and end_at %s after exclusions", from.Format(time.RFC3339), u.end.Format(time.RFC3339))
	case from.Equal(checkReference):
		return fmt.Errorf("never fires: every tick is excluded (checked over %d years of ticks)", CheckYears)
	default:
		return fmt.Errorf("never fires in the %d years from %s after exclusions", CheckYears, from.Format(time.RFC3339))
	}
}

// checkReference is where an unbounded search starts when nothing else
// says: a leap year, so that a date such as 29 February is seen.
var checkReference = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func (u *Union) checkFrom() time.Time {
	switch {
	case !u.start.IsZero():
		return u.start
	case !u.end.IsZero():
		return u.end.AddDate(-CheckYears, 0, 0)
	}
	return later(checkReference, u.finite)
}
