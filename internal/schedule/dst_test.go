package schedule

import (
	"slices"
	"testing"
	"time"

	cron "github.com/netresearch/go-cron"
)

// Europe/Berlin in 2026: clocks jump from 02:00 CET (+01:00) to 03:00 CEST
// (+02:00) on 29 March, and back from 03:00 CEST to 02:00 CET on 25 October.

// ticks is the n ticks of s after from, formatted in loc so that the
// offset shows which occurrence of a repeated wall time each one is.
func ticks(t *testing.T, s Schedule, from string, n int, loc *time.Location) []string {
	t.Helper()
	var out []string
	at := mustTime(t, from)
	for range n {
		at = s.Next(at)
		out = append(out, at.In(loc).Format(time.RFC3339))
	}
	return out
}

func TestDST(t *testing.T) {
	tests := []struct {
		name, spec, tz, from string
		want                 []string
	}{{
		name: "spring: a fixed time in the gap runs once, moved past the gap",
		spec: "30 2 * * *", tz: "Europe/Berlin", from: "2026-03-28T12:00:00+01:00",
		want: []string{"2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00"},
	}, {
		name: "spring: the same answer when the search starts inside the gap's shadow",
		spec: "30 2 * * *", tz: "Europe/Berlin", from: "2026-03-29T03:10:00+02:00",
		want: []string{"2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00"},
	}, {
		name: "spring: on the hour",
		spec: "0 2 * * *", tz: "Europe/Berlin", from: "2026-03-29T00:00:00+01:00",
		want: []string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:00:00+02:00"},
	}, {
		name: "spring: a tick before the gap does not swallow the one in it",
		spec: "30 1,2 * * *", tz: "Europe/Berlin", from: "2026-03-29T00:00:00+01:00",
		want: []string{"2026-03-29T01:30:00+01:00", "2026-03-29T03:30:00+02:00", "2026-03-30T01:30:00+02:00"},
	}, {
		name: "spring: a moved tick and a real one at the same instant are one",
		spec: "30 2,3 * * *", tz: "Europe/Berlin", from: "2026-03-29T00:00:00+01:00",
		want: []string{"2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00"},
	}, {
		name: "spring: a frequency skips wall times that do not exist",
		spec: "0 * * * *", tz: "Europe/Berlin", from: "2026-03-29T00:30:00+01:00",
		want: []string{"2026-03-29T01:00:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-29T04:00:00+02:00"},
	}, {
		name: "fall: a fixed time that happens twice runs once, the first time",
		spec: "30 2 * * *", tz: "Europe/Berlin", from: "2026-10-24T12:00:00+02:00",
		want: []string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"},
	}, {
		name: "fall: starting inside the repeated hour does not run it again",
		spec: "30 2 * * *", tz: "Europe/Berlin", from: "2026-10-25T02:10:00+01:00",
		want: []string{"2026-10-26T02:30:00+01:00"},
	}, {
		name: "fall: 6 fields, several fixed ticks in the repeated hour",
		spec: "0 0,30 2 * * *", tz: "Europe/Berlin", from: "2026-10-25T00:00:00+02:00",
		want: []string{"2026-10-25T02:00:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-26T02:00:00+01:00"},
	}, {
		name: "fall: a frequency follows the real clock through both hours",
		spec: "*/30 * * * *", tz: "Europe/Berlin", from: "2026-10-25T01:45:00+02:00",
		want: []string{
			"2026-10-25T02:00:00+02:00", "2026-10-25T02:30:00+02:00",
			"2026-10-25T02:00:00+01:00", "2026-10-25T02:30:00+01:00", "2026-10-25T03:00:00+01:00",
		},
	}, {
		name: "fall: @hourly is a frequency",
		spec: "@hourly", tz: "Europe/Berlin", from: "2026-10-25T01:30:00+02:00",
		want: []string{"2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00", "2026-10-25T03:00:00+01:00"},
	}, {
		name: "New York, spring (2026-03-08 02:00 EST -> 03:00 EDT)",
		spec: "15 2 * * *", tz: "America/New_York", from: "2026-03-07T12:00:00-05:00",
		want: []string{"2026-03-08T03:15:00-04:00", "2026-03-09T02:15:00-04:00"},
	}, {
		name: "New York, fall (2026-11-01 02:00 EDT -> 01:00 EST)",
		spec: "15 1 * * *", tz: "America/New_York", from: "2026-10-31T12:00:00-04:00",
		want: []string{"2026-11-01T01:15:00-04:00", "2026-11-02T01:15:00-05:00"},
	}, {
		name: "Lord Howe, a 30-minute fall-back (2026-04-05 02:00 +11:00 -> 01:30 +10:30)",
		spec: "45 1 * * *", tz: "Australia/Lord_Howe", from: "2026-04-04T12:00:00+11:00",
		want: []string{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"},
	}, {
		name: "Sao Paulo, midnight does not exist (2018-11-04 00:00 -03:00 -> 01:00 -02:00)",
		spec: "@daily", tz: "America/Sao_Paulo", from: "2018-11-03T12:00:00-03:00",
		want: []string{"2018-11-04T01:00:00-02:00", "2018-11-05T00:00:00-02:00"},
	}, {
		name: "@every ignores wall time entirely",
		spec: "@every 1h", tz: "Europe/Berlin", from: "2026-10-25T01:30:00+02:00",
		want: []string{"2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00", "2026-10-25T03:00:00+01:00"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc := mustLoad(t, tt.tz)
			s, err := Parse(tt.spec, loc)
			if err != nil {
				t.Fatal(err)
			}
			if got := ticks(t, s, tt.from, len(tt.want), loc); !slices.Equal(got, tt.want) {
				t.Errorf("ticks after %s\n got: %v\nwant: %v", tt.from, got, tt.want)
			}
		})
	}
}

// TestGoCronDST pins what go-cron v0.9.1 does on its own, which is why
// cronSchedule evaluates it in fixed zones only. If this test starts failing
// after an upgrade, revisit the comment on cronSchedule.
func TestGoCronDST(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	p, err := cron.TryNewParser(cronOptions)
	if err != nil {
		t.Fatal(err)
	}
	raw := func(spec string) Schedule {
		s, err := p.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s.(*cron.SpecSchedule).Location = berlin
		return s
	}
	tests := []struct {
		spec, from string
		want       []string
	}{
		// Fall-back: 02:30 fires twice.
		{"30 2 * * *", "2026-10-24T12:00:00+02:00", []string{"2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+01:00"}},
		// Spring-forward: 02:30 moves to 03:30 when the search runs through the gap...
		{"30 2 * * *", "2026-03-28T12:00:00+01:00", []string{"2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00"}},
		// ...but not when it starts after the gap...
		{"30 2 * * *", "2026-03-29T03:10:00+02:00", []string{"2026-03-30T02:30:00+02:00"}},
		// ...nor when an earlier tick of the same day stops the search before it.
		{"30 1,2 * * *", "2026-03-29T00:00:00+01:00", []string{"2026-03-29T01:30:00+01:00", "2026-03-30T01:30:00+02:00"}},
	}
	for _, tt := range tests {
		if got := ticks(t, raw(tt.spec), tt.from, len(tt.want), berlin); !slices.Equal(got, tt.want) {
			t.Errorf("go-cron %q after %s\n got: %v\nwant: %v", tt.spec, tt.from, got, tt.want)
		}
	}
}

// TestNextIsConsistent checks the property go-cron lacks on DST days: the
// ticks do not depend on where a search starts. For every t between two
// consecutive ticks a < b, Next(t) is b.
func TestNextIsConsistent(t *testing.T) {
	specs := []string{"30 2 * * *", "30 1,2 * * *", "0 0,30 2 * * *", "*/20 * * * *", "@hourly", "15 */2 * * *", "* 2 * * *"}
	days := []string{"2026-03-28T20:00:00Z", "2026-10-24T20:00:00Z"}
	berlin := mustLoad(t, "Europe/Berlin")
	for _, spec := range specs {
		s, err := Parse(spec, berlin)
		if err != nil {
			t.Fatal(err)
		}
		for _, day := range days {
			from := mustTime(t, day)
			a := from
			for b := s.Next(a); b.Before(from.Add(12 * time.Hour)); a, b = b, s.Next(b) {
				if !b.After(a) {
					t.Fatalf("%q: Next(%s) = %s, not after it", spec, a, b)
				}
				for at := a; at.Before(b); at = at.Add(7 * time.Minute) {
					if got := s.Next(at); !got.Equal(b) {
						t.Fatalf("%q: Next(%s) = %s, want %s", spec, at.In(berlin), got.In(berlin), b.In(berlin))
					}
				}
			}
		}
	}
}
