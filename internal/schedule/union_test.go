package schedule

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// rule builds an exclusion in the test's zone.
type rule func(t *testing.T, loc *time.Location) Exclusion

func cal(name string, dates ...string) rule {
	return func(t *testing.T, loc *time.Location) Exclusion {
		t.Helper()
		e, err := NewCalendar(name, dates, loc)
		if err != nil {
			t.Fatalf("calendar: %v", err)
		}
		return e
	}
}

func cronRule(expr string) rule {
	return func(t *testing.T, loc *time.Location) Exclusion {
		t.Helper()
		e, err := NewCronExclusion(expr, loc)
		if err != nil {
			t.Fatalf("cron exclusion: %v", err)
		}
		return e
	}
}

func rangeRule(from, to string) rule {
	return func(t *testing.T, _ *time.Location) Exclusion {
		t.Helper()
		e, err := NewBetween(mustTime(t, from), mustTime(t, to))
		if err != nil {
			t.Fatalf("range: %v", err)
		}
		return e
	}
}

type unionSpec struct {
	tz         string
	schedules  []string
	exclude    []rule
	start, end string
}

func (s unionSpec) build(t *testing.T) *Union {
	t.Helper()
	loc := mustLoad(t, s.tz)
	var scheds []Schedule
	for _, spec := range s.schedules {
		p, err := Parse(spec, loc)
		if err != nil {
			t.Fatalf("parse %q: %v", spec, err)
		}
		scheds = append(scheds, p)
	}
	var rules []Exclusion
	for _, r := range s.exclude {
		rules = append(rules, r(t, loc))
	}
	var start, end time.Time
	if s.start != "" {
		start = mustTime(t, s.start)
	}
	if s.end != "" {
		end = mustTime(t, s.end)
	}
	u, err := NewUnion(scheds, rules, start, end)
	if err != nil {
		t.Fatalf("union: %v", err)
	}
	return u
}

// unionTicks returns up to n ticks after from, shown in loc; an
// "end" entry marks that Next found none.
func unionTicks(t *testing.T, u *Union, loc *time.Location, from string, n int) []string {
	t.Helper()
	var out []string
	at := mustTime(t, from)
	for range n {
		if at = u.Next(at); at.IsZero() {
			return append(out, "end")
		}
		out = append(out, at.In(loc).Format(time.RFC3339))
	}
	return out
}

// TestUnion is a table of fixed dates, in robfig/cron's style. Times carry
// their offsets, so a tick in the wrong zone period shows as a wrong string.
func TestUnion(t *testing.T) {
	tests := []struct {
		name string
		unionSpec
		from string
		want []string
	}{{
		name:      "two schedules interleave: weekdays at 18:00, Saturdays at 12:00",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"0 18 * * 1-5", "0 12 * * 6"}},
		from:      "2026-12-04T12:00:00Z", // a Friday
		want:      []string{"2026-12-04T18:00:00Z", "2026-12-05T12:00:00Z", "2026-12-07T18:00:00Z"},
	}, {
		name:      "the same instant from two schedules is one tick",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"0 12 * * *", "0 */6 * * *"}},
		from:      "2026-01-01T05:00:00Z",
		want:      []string{"2026-01-01T06:00:00Z", "2026-01-01T12:00:00Z", "2026-01-01T18:00:00Z"},
	}, {
		name:      "cron and @every in one union",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"@every 40m", "0 1 * * *"}},
		from:      "2026-01-01T00:30:00Z",
		want:      []string{"2026-01-01T00:40:00Z", "2026-01-01T01:00:00Z", "2026-01-01T01:20:00Z"},
	}, {
		name: "the example of schedules.md: holidays, Fridays and the year-end freeze excluded",
		unionSpec: unionSpec{tz: "Europe/Berlin", schedules: []string{"0 18 * * 1-5", "0 12 * * 6"},
			exclude: []rule{cal("holidays-de", "2026-12-24", "2026-12-25", "2026-12-26", "2027-01-01"),
				cronRule("* * * * 5"), rangeRule("2026-12-28T00:00:00+01:00", "2027-01-02T00:00:00+01:00")}},
		from: "2026-12-22T19:00:00+01:00",
		want: []string{"2026-12-23T18:00:00+01:00", "2027-01-02T12:00:00+01:00", "2027-01-04T18:00:00+01:00"},
	}, {
		name: "Berlin spring forward: a tick moved out of the gap is on its date, and the calendar excludes it",
		unionSpec: unionSpec{tz: "Europe/Berlin", schedules: []string{"30 2 * * *"},
			exclude: []rule{cal("c", "2026-03-29")}},
		from: "2026-03-28T12:00:00+01:00",
		want: []string{"2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00"},
	}, {
		name: "Berlin fall back: the excluded day is 25 hours long, all of them excluded",
		unionSpec: unionSpec{tz: "Europe/Berlin", schedules: []string{"0 * * * *"},
			exclude: []rule{cal("c", "2026-10-25")}},
		from: "2026-10-24T22:30:00+02:00",
		want: []string{"2026-10-24T23:00:00+02:00", "2026-10-26T00:00:00+01:00", "2026-10-26T01:00:00+01:00"},
	}, {
		name: "Berlin: a range across the change of offset",
		unionSpec: unionSpec{tz: "Europe/Berlin", schedules: []string{"0 2 * * *"},
			exclude: []rule{rangeRule("2026-10-24T00:00:00+02:00", "2026-10-26T00:00:00+01:00")}},
		from: "2026-10-23T12:00:00+02:00",
		want: []string{"2026-10-26T02:00:00+01:00"},
	}, {
		name: "New York fall back: an hour excluded by cron is excluded both times the clock shows it",
		unionSpec: unionSpec{tz: "America/New_York", schedules: []string{"*/30 * * * *"},
			exclude: []rule{cronRule("* 1 * * *")}},
		from: "2026-11-01T00:45:00-04:00",
		want: []string{"2026-11-01T02:00:00-05:00", "2026-11-01T02:30:00-05:00"},
	}, {
		name: "New York spring forward: a tick moved to 03:30 matches by the time the clock showed",
		unionSpec: unionSpec{tz: "America/New_York", schedules: []string{"30 2 * * *"},
			exclude: []rule{cronRule("30 3 * * *")}},
		from: "2026-03-07T12:00:00-05:00",
		want: []string{"2026-03-09T02:30:00-04:00"},
	}, {
		name: "New York: the range end is exclusive",
		unionSpec: unionSpec{tz: "America/New_York", schedules: []string{"0 * * * *"},
			exclude: []rule{rangeRule("2026-03-08T01:00:00-05:00", "2026-03-08T04:00:00-04:00")}},
		from: "2026-03-08T00:00:00-05:00",
		want: []string{"2026-03-08T04:00:00-04:00"},
	}, {
		name: "Kolkata: whole days in a half-hour zone; @every 1h ticks at :30 there",
		unionSpec: unionSpec{tz: "Asia/Kolkata", schedules: []string{"@every 1h"},
			exclude: []rule{cal("republic-day", "2026-01-26")}},
		from: "2026-01-25T23:00:00+05:30",
		want: []string{"2026-01-25T23:30:00+05:30", "2026-01-27T00:30:00+05:30"},
	}, {
		name: "Kolkata: a cron exclusion matches the wall-clock minute",
		unionSpec: unionSpec{tz: "Asia/Kolkata", schedules: []string{"*/15 9 * * *"},
			exclude: []rule{cronRule("15,30 9 * * *")}},
		from: "2026-01-05T08:00:00+05:30",
		want: []string{"2026-01-05T09:00:00+05:30", "2026-01-05T09:45:00+05:30", "2026-01-06T09:00:00+05:30"},
	}, {
		name: "Adelaide: a calendar day on the day daylight saving ends",
		unionSpec: unionSpec{tz: "Australia/Adelaide", schedules: []string{"0 12 * * *"},
			exclude: []rule{cal("c", "2026-04-05")}},
		from: "2026-04-04T13:00:00+10:30",
		want: []string{"2026-04-06T12:00:00+09:30"},
	}, {
		name: "leap day excluded: the next 29 February is four years on",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"0 0 29 2 *"},
			exclude: []rule{cal("c", "2028-02-29")}},
		from: "2026-01-01T00:00:00Z",
		want: []string{"2032-02-29T00:00:00Z"},
	}, {
		name: "two leap days excluded: the search runs on past the last excluded date",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"0 0 29 2 *"},
			exclude: []rule{cal("c", "2028-02-29", "2032-02-29")}},
		from: "2026-01-01T00:00:00Z",
		want: []string{"2036-02-29T00:00:00Z"},
	}, {
		name: "leap day: a daily schedule skips only the 29th",
		unionSpec: unionSpec{tz: "Europe/Berlin", schedules: []string{"0 6 * * *"},
			exclude: []rule{cal("c", "2028-02-29")}},
		from: "2028-02-28T07:00:00+01:00",
		want: []string{"2028-03-01T06:00:00+01:00"},
	}, {
		name:      "start_at: a tick at start_at fires, none before",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"0 * * * *"}, start: "2026-06-01T10:00:00Z"},
		from:      "2026-01-01T00:00:00Z",
		want:      []string{"2026-06-01T10:00:00Z", "2026-06-01T11:00:00Z"},
	}, {
		name:      "start_at between ticks: the first tick after it",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"0 * * * *"}, start: "2026-06-01T10:00:01Z"},
		from:      "2026-01-01T00:00:00Z",
		want:      []string{"2026-06-01T11:00:00Z"},
	}, {
		name:      "end_at: no tick at or after end_at",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"0 * * * *"}, end: "2026-06-01T12:00:00Z"},
		from:      "2026-06-01T10:30:00Z",
		want:      []string{"2026-06-01T11:00:00Z", "end"},
	}, {
		name: "start_at on a leap day, in a zone with an offset",
		unionSpec: unionSpec{tz: "America/New_York", schedules: []string{"0 0 * * *"},
			start: "2028-02-29T00:00:00-05:00", end: "2028-03-02T00:00:00-05:00"},
		from: "2028-01-01T00:00:00-05:00",
		want: []string{"2028-02-29T00:00:00-05:00", "2028-03-01T00:00:00-05:00", "end"},
	}, {
		name: "a six-field exclusion matches the second",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"*/10 * * * * *"},
			exclude: []rule{cronRule("0 * * * * *")}},
		from: "2026-01-01T11:59:55Z",
		want: []string{"2026-01-01T12:00:10Z"},
	}, {
		name: "exclusions that cover every tick leave none",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"0 18 * * 5"},
			exclude: []rule{cronRule("* * * * fri")}},
		from: "2026-01-01T00:00:00Z",
		want: []string{"end"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := tt.build(t)
			got := unionTicks(t, u, mustLoad(t, tt.tz), tt.from, len(tt.want))
			if !slices.Equal(got, tt.want) {
				t.Errorf("ticks after %s:\n got %q\nwant %q", tt.from, got, tt.want)
			}
		})
	}
}

func TestExplain(t *testing.T) {
	u := unionSpec{tz: "Europe/Berlin", schedules: []string{"0 18 * * 1-5", "0 12 * * 6"},
		exclude: []rule{cal("holidays-de", "2026-12-24", "2026-12-25", "2026-12-26"), cronRule("* * * * 5")},
		end:     "2026-12-29T00:00:00+01:00"}.build(t)
	var got []string
	for _, tick := range u.Explain(mustTime(t, "2026-12-23T12:00:00+01:00"), 10, time.Time{}) {
		got = append(got, tick.At.Format(time.RFC3339)+" "+tick.ExcludedBy)
	}
	want := []string{
		"2026-12-23T18:00:00+01:00 ",
		`2026-12-24T18:00:00+01:00 calendar "holidays-de"`,
		`2026-12-25T18:00:00+01:00 calendar "holidays-de"`, // a Friday too: the first rule names it
		`2026-12-26T12:00:00+01:00 calendar "holidays-de"`,
		"2026-12-28T18:00:00+01:00 ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Explain:\n got %q\nwant %q", got, want)
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		unionSpec
		want string // "" when the union fires
	}{{
		name:      "fires",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"0 18 * * 5"}},
	}, {
		name:      "a cron exclusion that covers the schedule",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"0 18 * * 5"}, exclude: []rule{cronRule("* * * * 5")}},
		want:      "never fires: every tick is excluded (checked over 5 years of ticks)",
	}, {
		name: "a calendar only shifts the search past its last date",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"0 0 25 12 *"},
			exclude: []rule{cal("c", "2026-12-25")}},
	}, {
		name: "a range that outlasts the horizon",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"0 12 * * *"},
			exclude: []rule{rangeRule("2026-01-01T00:00:00Z", "2036-01-01T00:00:00Z")},
			start:   "2026-06-01T00:00:00Z"},
		want: "never fires in the 5 years from 2026-06-01T00:00:00Z after exclusions",
	}, {
		name: "the active period holds only excluded ticks",
		unionSpec: unionSpec{tz: "Europe/Berlin", schedules: []string{"0 12 * * *"},
			exclude: []rule{cal("c", "2026-12-24", "2026-12-25")},
			start:   "2026-12-24T00:00:00+01:00", end: "2026-12-26T00:00:00+01:00"},
		want: "never fires between 2026-12-24T00:00:00+01:00 and end_at 2026-12-26T00:00:00+01:00 after exclusions",
	}, {
		name: "an @every 1s whose ticks are all excluded one by one stops at the candidate bound",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"@every 1s"},
			exclude: []rule{cronRule("*/2 * * * * *"), cronRule("1-59/2 * * * * *")}},
		want: "never fires: its first 100000 ticks are all excluded",
	}, {
		name: "the candidate bound from start_at",
		unionSpec: unionSpec{tz: "UTC", schedules: []string{"@every 1s"}, start: "2026-06-01T00:00:00Z",
			exclude: []rule{cronRule("*/2 * * * * *"), cronRule("1-59/2 * * * * *")}},
		want: "never fires: its first 100000 ticks from 2026-06-01T00:00:00Z are all excluded",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.build(t).Check()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Check() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestExclusionErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{}
	_, err := NewCalendar("c", []string{"2026-02-30"}, time.UTC)
	tests = append(tests, struct {
		name string
		err  error
		want string
	}{"date that does not exist", err, `date "2026-02-30" does not exist`})
	_, err = NewCalendar("c", []string{"26-1-1"}, time.UTC)
	tests = append(tests, struct {
		name string
		err  error
		want string
	}{"bad date", err, `invalid date "26-1-1": want YYYY-MM-DD, e.g. 2026-12-24`})
	_, err = NewCronExclusion("@every 1h", time.UTC)
	tests = append(tests, struct {
		name string
		err  error
		want string
	}{"@every", err, `"@every 1h": want a cron expression (5 or 6 fields) or a macro such as @daily`})
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, tt.err, tt.want)
		}
	}
}
