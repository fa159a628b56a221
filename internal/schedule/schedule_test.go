package schedule

import (
	"testing"
	"time"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("parse time %q: %v", s, err)
	}
	return v
}

// TestNext follows robfig/cron's spec_test.go: a table of fixed dates. Times
// carry their offset, so a wrong zone shows up as a wrong string.
func TestNext(t *testing.T) {
	tests := []struct {
		spec, tz, from, want string
	}{
		// 5 fields.
		{"* * * * *", "UTC", "2026-01-01T12:00:30Z", "2026-01-01T12:01:00Z"},
		{"* * * * *", "UTC", "2026-01-01T12:00:00Z", "2026-01-01T12:01:00Z"},
		{"*/15 * * * *", "UTC", "2026-01-01T12:07:00Z", "2026-01-01T12:15:00Z"},
		{"0 2 * * *", "UTC", "2026-01-01T02:00:00Z", "2026-01-02T02:00:00Z"},
		{"30 12 * * mon-fri", "UTC", "2026-01-02T13:00:00Z", "2026-01-05T12:30:00Z"}, // Fri -> Mon
		{"0 0 * * THU", "UTC", "2026-01-01T00:00:00Z", "2026-01-08T00:00:00Z"},
		{"0 0 1 * mon", "UTC", "2026-01-01T00:00:00Z", "2026-01-05T00:00:00Z"}, // dom OR dow
		{"0 0 1 * mon", "UTC", "2026-01-26T00:00:00Z", "2026-02-01T00:00:00Z"},
		{"0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", "2028-02-29T00:00:00Z"},
		{"0 9 1-7 jan-mar sun", "UTC", "2026-02-20T00:00:00Z", "2026-02-22T09:00:00Z"},
		{"5 4 * * 7", "UTC", "2026-01-01T00:00:00Z", "2026-01-04T04:05:00Z"}, // 7 is Sunday too
		// Ranges that run forwards are unchanged by the backwards check.
		{"0 0 * * sat-7", "UTC", "2026-01-01T00:00:00Z", "2026-01-03T00:00:00Z"},
		{"5-5 0 * * *", "UTC", "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"},
		{"10-40/10 * * * *", "UTC", "2026-01-01T00:41:00Z", "2026-01-01T01:10:00Z"},
		// 6 fields: seconds first.
		{"*/10 * * * * *", "UTC", "2026-01-01T12:00:05.5Z", "2026-01-01T12:00:10Z"},
		{"30 0 9 * * *", "UTC", "2026-01-01T09:00:30Z", "2026-01-02T09:00:30Z"},
		{"0 30 2 * * *", "UTC", "2026-01-01T00:00:00Z", "2026-01-01T02:30:00Z"},
		// Macros.
		{"@hourly", "UTC", "2026-01-01T12:34:00Z", "2026-01-01T13:00:00Z"},
		{"@daily", "UTC", "2026-01-01T12:34:00Z", "2026-01-02T00:00:00Z"},
		{"@midnight", "UTC", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"},
		{"@weekly", "UTC", "2026-01-01T12:00:00Z", "2026-01-04T00:00:00Z"}, // Sunday
		{"@monthly", "UTC", "2026-01-15T00:00:00Z", "2026-02-01T00:00:00Z"},
		{"@yearly", "UTC", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"@annually", "UTC", "2026-06-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"  @daily  ", "UTC", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"},
		// IANA zones: wall time of the zone, answer in the caller's zone.
		{"0 9 * * *", "America/New_York", "2026-01-01T00:00:00Z", "2026-01-01T14:00:00Z"},
		{"0 9 * * *", "America/New_York", "2026-07-01T00:00:00Z", "2026-07-01T13:00:00Z"},
		{"0 9 * * *", "Asia/Kolkata", "2026-01-01T00:00:00Z", "2026-01-01T03:30:00Z"},
		{"@daily", "Europe/Berlin", "2026-01-01T12:00:00Z", "2026-01-01T23:00:00Z"},
		{"0 9 * * *", "Asia/Tokyo", "2026-01-01T09:00:00+09:00", "2026-01-02T09:00:00+09:00"},
		// @every: whole multiples of the interval since the Unix epoch.
		{"@every 7s", "UTC", "2026-05-17T13:45:02.3Z", "2026-05-17T13:45:07Z"},
		{"@every 7s", "UTC", "2026-05-17T13:45:07Z", "2026-05-17T13:45:14Z"},
		{"@every 7s", "Europe/Berlin", "2026-05-17T13:45:02Z", "2026-05-17T13:45:07Z"},
		{"@every 7s", "UTC", "1969-12-31T23:59:50Z", "1969-12-31T23:59:53Z"},
		{"@every 7s", "UTC", "1969-12-31T23:59:53Z", "1970-01-01T00:00:00Z"},
		{"@every 1h", "UTC", "2026-01-01T12:34:56Z", "2026-01-01T13:00:00Z"},
		{"@every 90m", "UTC", "2026-01-01T00:00:00Z", "2026-01-01T01:30:00Z"},
		{"@every 500ms", "UTC", "2026-01-01T00:00:00.2Z", "2026-01-01T00:00:00.5Z"},
		{"@every 500ms", "UTC", "2026-01-01T00:00:00.5Z", "2026-01-01T00:00:01Z"},
		{"@every 500ms", "UTC", "2026-01-01T00:00:00.4999999Z", "2026-01-01T00:00:00.5Z"},
		{"@every 24h", "Asia/Kolkata", "2026-01-01T10:00:00+05:30", "2026-01-02T05:30:00+05:30"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.spec, mustLoad(t, tt.tz))
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.spec, err)
			continue
		}
		from := mustTime(t, tt.from)
		got := s.Next(from).Format(time.RFC3339Nano)
		if got != tt.want {
			t.Errorf("%q in %s: Next(%s) = %s, want %s", tt.spec, tt.tz, tt.from, got, tt.want)
		}
	}
}

func TestParseNilLocationIsUTC(t *testing.T) {
	s, err := Parse("0 9 * * *", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Next(mustTime(t, "2026-01-01T00:00:00Z")).Format(time.RFC3339)
	if got != "2026-01-01T09:00:00Z" {
		t.Errorf("got %s", got)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"", "empty schedule"},
		{"1 2 3 4", "expected 5 or 6 fields, got 4"},
		{"* * * * * * *", "expected 5 or 6 fields, got 7"},
		{"61 * * * *", `minute "61": out of range 0-59`},
		{"* 25 * * *", `hour "25": out of range 0-23`},
		{"* * 0 * *", `day-of-month "0": out of range 1-31`},
		{"* * * 13 *", `month "13": out of range 1-12`},
		{"* * * * 8", `day-of-week "8": out of range 0-7`},
		{"60 * * * * *", `second "60": out of range 0-59`},
		{"x * * * *", `minute "x": "x" is not a number`},
		{"0 0 * foo *", `month "foo": "foo" is not a number or name`},
		{"1-x * * * *", `minute "1-x": "x" is not a number`},
		{"*/0 * * * *", `minute "*/0": step must be positive`},
		{"*/60 * * * *", `minute "*/60": step (60) must be less than range size (60)`},
		{"1-2-3 * * * *", `minute "1-2-3": too many hyphens`},
		{"H * * * *", `minute "h": "h" is not a number`},
		{"0 0 L * *", `day-of-month "l": extended syntax (H, L, W, #) is not supported`},
		{"0 0 * * fri#3", `day-of-week "fri#3": extended syntax (H, L, W, #) is not supported`},
		{"0 0 30 2 *", `"0 0 30 2 *" never fires: no such date`},
		// Backwards ranges: go-cron would wrap them around, robfig/cron
		// (Kubernetes) refuses them.
		{"10-0 * * * *", `minute "10-0": range 10-0 runs backwards: ranges do not wrap around, write "10-59,0"`},
		{"0 22-2 * * *", `hour "22-2": range 22-2 runs backwards: ranges do not wrap around, write "22-23,0-2"`},
		{"0 0 * * fri-mon", `day-of-week "fri-mon": range fri-mon runs backwards: ranges do not wrap around, write "5-6,0-1"`},
		{"0 0 1 dec-jan *", `month "dec-jan": range dec-jan runs backwards: ranges do not wrap around, write "12,1"`},
		{"50-10/5 * * * *", `minute "50-10/5": range 50-10 runs backwards: ranges do not wrap around, write "50-59,0-10"`},
		{"0 1,5-3 * * * *", `minute "1,5-3": range 5-3 runs backwards: ranges do not wrap around, write "5-59,0-3"`},
		{"@foo", `unknown macro "@foo" (want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @manually or @every <duration>)`},
		{"@daily 5", `unknown macro "@daily 5" (want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @manually or @every <duration>)`},
		{"@every", `@every takes one duration, e.g. "@every 30s"`},
		{"@every x", `@every: invalid duration "x"`},
		{"@every 10", `@every: invalid duration "10"`},
		{"@every 50ms", "@every 50ms: must be at least 100ms"},
		{"@every -1s", "@every -1s: must be at least 100ms"},
		{"@every 100500us", "@every 100500us: must be a whole number of milliseconds"},
		{"CRON_TZ=Europe/Berlin 0 2 * * *", `"CRON_TZ=Europe/Berlin" prefix is not allowed: set the timezone field instead`},
		{"TZ=UTC @daily", `"TZ=UTC" prefix is not allowed: set the timezone field instead`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.spec, time.UTC)
		if err == nil {
			t.Errorf("Parse(%q): no error, want %q", tt.spec, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("Parse(%q)\n got: %s\nwant: %s", tt.spec, err, tt.want)
		}
	}
}

func TestJitter(t *testing.T) {
	tick := mustTime(t, "2026-01-01T02:00:00Z")
	if d := Jitter("a", tick, 0); d != 0 {
		t.Errorf("max 0: got %v", d)
	}
	if d := Jitter("a", tick, -time.Second); d != 0 {
		t.Errorf("max < 0: got %v", d)
	}
	// Deterministic: the same inputs always give the same delay.
	if a, b := Jitter("a", tick, time.Minute), Jitter("a", tick, time.Minute); a != b {
		t.Errorf("not deterministic: %v != %v", a, b)
	}
	// In range, and spread: many ticks of one job do not collapse.
	seen := map[time.Duration]bool{}
	for i := range 1000 {
		d := Jitter("nightly-report", tick.Add(time.Duration(i)*time.Hour), 10*time.Second)
		if d < 0 || d >= 10*time.Second {
			t.Fatalf("out of range: %v", d)
		}
		seen[d.Truncate(time.Second)] = true
	}
	if len(seen) != 10 {
		t.Errorf("1000 ticks fell in %d of 10 one-second buckets", len(seen))
	}
	// Different jobs on one tick spread out too.
	if Jitter("a", tick, time.Hour) == Jitter("b", tick, time.Hour) {
		t.Error("jobs a and b got the same delay")
	}
}
