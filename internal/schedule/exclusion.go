package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	cron "github.com/netresearch/go-cron"
)

// Exclusion is a rule that takes ticks out of a Union. Ticks it excludes
// are neither run nor recorded.
type Exclusion interface {
	// Until reports whether t is excluded and, if so, the end (exclusive)
	// of the excluded stretch that holds t, so that a search can jump past
	// the whole stretch instead of testing every tick in it.
	Until(t time.Time) (time.Time, bool)
	// String names the rule in explanations, e.g. `calendar "holidays"`.
	String() string
}

// DateLayout is the syntax of a calendar date.
const DateLayout = "2006-01-02"

type civilDate struct {
	year  int
	month time.Month
	day   int
}

func dateOf(t time.Time) civilDate {
	y, m, d := t.Date()
	return civilDate{y, m, d}
}

// calendar excludes whole days, as the wall clock of loc counts them.
type calendar struct {
	name  string
	loc   *time.Location
	dates map[civilDate]bool
	last  time.Time // the midnight that ends the last date
}

// ParseDate reads a date YYYY-MM-DD, refusing one that does not exist
// (2026-02-30) rather than rolling it over into the next month.
func ParseDate(s string) (time.Time, error) {
	d, err := time.Parse(DateLayout, s)
	if err == nil {
		return d, nil
	}
	var pe *time.ParseError
	if errors.As(err, &pe) && strings.Contains(pe.Message, "out of range") {
		return time.Time{}, fmt.Errorf("date %q does not exist", s)
	}
	return time.Time{}, fmt.Errorf("invalid date %q: want YYYY-MM-DD, e.g. 2026-12-24", s)
}

// NewCalendar excludes every tick whose wall-clock date in loc is one of
// dates (YYYY-MM-DD). name is how explanations refer to it.
func NewCalendar(name string, dates []string, loc *time.Location) (Exclusion, error) {
	if loc == nil {
		loc = time.UTC
	}
	c := &calendar{name: name, loc: loc, dates: make(map[civilDate]bool, len(dates))}
	for _, s := range dates {
		d, err := ParseDate(s)
		if err != nil {
			return nil, err
		}
		c.dates[dateOf(d)] = true
		if end := time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, loc); end.After(c.last) {
			c.last = end
		}
	}
	return c, nil
}

// Until ends the stretch at the first midnight, in loc, of a day that is
// not in the calendar.
func (c *calendar) Until(t time.Time) (time.Time, bool) {
	d := dateOf(t.In(c.loc))
	if !c.dates[d] {
		return time.Time{}, false
	}
	for c.dates[d] {
		d = dateOf(time.Date(d.year, d.month, d.day+1, 0, 0, 0, 0, time.UTC))
	}
	return time.Date(d.year, d.month, d.day, 0, 0, 0, 0, c.loc), true
}

func (c *calendar) String() string { return fmt.Sprintf("calendar %q", c.name) }

// end is the end of the last excluded day.
func (c *calendar) end() time.Time { return c.last }

// between excludes the half-open range [from, to).
type between struct {
	from, to time.Time
}

// NewBetween excludes ticks at or after from and before to.
func NewBetween(from, to time.Time) (Exclusion, error) {
	if !to.After(from) {
		return nil, fmt.Errorf("to (%s) must be after from (%s)", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	return between{from: from, to: to}, nil
}

func (b between) Until(t time.Time) (time.Time, bool) {
	if t.Before(b.from) || !t.Before(b.to) {
		return time.Time{}, false
	}
	return b.to, true
}

func (b between) end() time.Time { return b.to }

func (b between) String() string {
	return "from " + b.from.Format(time.RFC3339) + " to " + b.to.Format(time.RFC3339)
}

// cronMatch excludes ticks whose wall-clock minute in loc matches a
// five-field expression, or whose second matches a six-field one. Matching
// is by the wall clock alone, so on a fall-back day both 02:30s match
// "30 2 * * *", and a tick moved out of a spring-forward gap matches by the
// time the clock showed when it fired.
type cronMatch struct {
	c    *cronSchedule
	spec *cron.SpecSchedule // c's fields in UTC, where wall time is plain
	unit time.Duration
}

// maxStretch bounds how many consecutive matching minutes (or seconds) one
// Until call joins into a stretch; the search simply continues past it.
const maxStretch = 10_000

// NewCronExclusion parses expr (5 or 6 fields, or a macro such as @daily)
// as an exclusion evaluated in loc.
func NewCronExclusion(expr string, loc *time.Location) (Exclusion, error) {
	if loc == nil {
		loc = time.UTC
	}
	spec := strings.TrimSpace(expr)
	if strings.HasPrefix(spec, "@") {
		m, ok := macros[spec]
		if !ok {
			return nil, fmt.Errorf("%q: want a cron expression (5 or 6 fields) or a macro such as @daily", expr)
		}
		spec = m
	}
	c, err := parseCron(spec, loc)
	if err != nil {
		return nil, err
	}
	c.expr = expr
	unit := time.Minute
	if len(strings.Fields(spec)) == 6 {
		unit = time.Second
	}
	return &cronMatch{c: c, spec: c.in(0), unit: unit}, nil
}

func (m *cronMatch) matches(t time.Time) bool {
	w := t.In(m.c.loc)
	s := m.spec
	if len(s.DomConstraints) > 0 || len(s.DowConstraints) > 0 || s.Year != nil {
		// L, W and # depend on the month: let go-cron decide.
		sec := 0
		if m.unit == time.Second {
			sec = w.Second()
		}
		u := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), sec, 0, time.UTC)
		return s.Next(u.Add(-time.Nanosecond)).Equal(u)
	}
	if m.unit == time.Second && !has(s.Second, w.Second()) {
		return false
	}
	if !has(s.Minute, w.Minute()) || !has(s.Hour, w.Hour()) || !has(s.Month, int(w.Month())) {
		return false
	}
	dom, dow := has(s.Dom, w.Day()), has(s.Dow, int(w.Weekday()))
	// The classic rule of cronOptions' DowOrDom: either day field
	// matches when both are restricted.
	if s.Dom&starBit > 0 || s.Dow&starBit > 0 {
		return dom && dow
	}
	return dom || dow
}

// starBit is how go-cron marks a field written as "*".
const starBit = 1 << 63

func has(bits uint64, n int) bool { return bits&(1<<uint(n)) != 0 }

func (m *cronMatch) Until(t time.Time) (time.Time, bool) {
	if !m.matches(t) {
		return time.Time{}, false
	}
	end := t.Truncate(m.unit).Add(m.unit)
	for range maxStretch {
		if !m.matches(end) {
			break
		}
		end = end.Add(m.unit)
	}
	return end, true
}

func (m *cronMatch) String() string { return fmt.Sprintf("cron %q", m.c.expr) }
