package schedule

import (
	"fmt"
	"strings"
	"time"

	cron "github.com/netresearch/go-cron"
)

// cronOptions is the robfig/Kubernetes dialect: 5 fields, or 6 with leading
// seconds, names for months and weekdays. DowOrDom keeps the classic rule
// that a restricted day-of-month and day-of-week match either one
// ("0 0 1 * mon" is the 1st and every Monday); go-cron defaults to both.
const cronOptions = cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom |
	cron.Month | cron.Dow | cron.DowOrDom

// cronSchedule is a cron expression evaluated as wall-clock time in loc.
//
// go-cron's own Next has three problems on daylight-saving days (see
// TestGoCronDST): on fall-back a fixed time such as 02:30 fires twice; on
// spring-forward a fixed time in the skipped hour fires an hour late only if
// the search happened to start before the gap ("30 1,2 * * *" silently loses
// 02:30); and the answer depends on where the search starts. So we only let
// go-cron evaluate the expression in fixed-offset zones, where wall time is
// plain arithmetic, walk loc's zone periods ourselves and apply these rules:
//
//   - A wall time that happens twice fires once, at its first occurrence,
//     unless the minute or hour field starts with "*": such a schedule is a
//     frequency and keeps firing by the real clock (ISC cron does the same).
//   - A wall time that does not exist fires at the instant the clock would
//     have shown it had it not jumped (02:30 becomes 03:30 CEST), unless the
//     schedule is a frequency, whose next tick comes soon anyway.
type cronSchedule struct {
	expr string
	loc  *time.Location
	spec *cron.SpecSchedule
	// frequency: the minute or hour field starts with "*".
	frequency bool
}

func parseCron(expr string, loc *time.Location) (*cronSchedule, error) {
	fields := strings.Fields(expr)
	if n := len(fields); n != 5 && n != 6 {
		return nil, fmt.Errorf("expected 5 or 6 fields, got %d", n)
	}
	// go-cron reads any upper-case H as its hash syntax, so "THU" would be
	// rejected; names are case-insensitive, so lower case loses nothing.
	for i, f := range fields {
		fields[i] = strings.ToLower(f)
	}
	parser, err := cron.TryNewParser(cronOptions)
	if err != nil {
		return nil, fmt.Errorf("cron parser: %w", err)
	}
	s, err := parser.Parse(strings.Join(fields, " "))
	if err != nil {
		return nil, fieldError(fields, err)
	}
	if err := checkRanges(fields); err != nil {
		return nil, err
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("cron parser returned %T", s)
	}
	named := fields
	if len(named) == 5 {
		named = append([]string{"0"}, named...)
	}
	c := &cronSchedule{
		expr:      expr,
		loc:       loc,
		spec:      spec,
		frequency: isStar(named[1]) || isStar(named[2]),
	}
	// A date that never comes ("0 0 30 2 *") would leave a job silently
	// idle; every valid combination recurs within go-cron's 5-year search
	// from a leap year.
	if c.in(0).Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, fmt.Errorf("%q never fires: no such date", expr)
	}
	return c, nil
}

func isStar(field string) bool {
	return strings.HasPrefix(field, "*") || strings.HasPrefix(field, "?")
}

func (c *cronSchedule) String() string { return c.expr }

// in returns the expression evaluated in a zone fixed at offset seconds east
// of UTC. The copy keeps Next free of shared mutable state.
func (c *cronSchedule) in(offset int) *cron.SpecSchedule {
	s := *c.spec
	s.Location = time.FixedZone("", offset)
	return &s
}

// maxPeriods bounds the walk over zone periods; two a year is the norm and
// go-cron itself searches five years ahead.
const maxPeriods = 64

// Next returns the first tick after t under the rules on cronSchedule.
func (c *cronSchedule) Next(t time.Time) time.Time {
	after := t
	for range maxPeriods {
		at := after.Add(time.Nanosecond).In(c.loc)
		_, offset := at.Zone()
		start, end := at.ZoneBounds()
		shift := 0 // offset change at start: > 0 skipped wall time, < 0 repeated
		if !start.IsZero() {
			_, before := start.Add(-time.Nanosecond).In(c.loc).Zone()
			shift = offset - before
		}
		window := start.Add(time.Duration(abs(shift)) * time.Second)

		var skipped time.Time // a wall time of the gap, moved past it
		if shift > 0 && !c.frequency && after.Before(window) {
			from := later(after, start.Add(-time.Nanosecond))
			if g := c.in(offset - shift).Next(from); !g.IsZero() && g.Before(window) {
				skipped = g
			}
		}
		n := c.in(offset).Next(after)
		switch {
		case n.IsZero() || (!end.IsZero() && !n.Before(end)):
			if !skipped.IsZero() {
				return skipped.In(t.Location())
			}
			if n.IsZero() || end.IsZero() {
				return time.Time{}
			}
			after = end.Add(-time.Nanosecond)
			continue
		case shift < 0 && !c.frequency && n.Before(window):
			// A repeat of a wall time that already fired before the
			// clock went back: skip the whole repeated stretch.
			after = window.Add(-time.Nanosecond)
			continue
		}
		if !skipped.IsZero() && skipped.Before(n) {
			n = skipped
		}
		return n.In(t.Location())
	}
	return time.Time{}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
