package jsonappend

import (
	"encoding/json"
	"testing"
	"time"
)

// Each appender writes what encoding/json writes, escapes and odd times
// included.
func TestAppendersWriteWhatEncodingJSONWrites(t *testing.T) {
	for _, s := range []string{"", "nightly@2026-11-30T04:00:00Z", "a\"b", `back\slash`, "<tag>&", "tab\there", "é", "\u2028", "\xff"} {
		want, _ := json.Marshal(s)
		if got := String(nil, s); string(got) != string(want) {
			t.Errorf("String(%q) = %s, want %s", s, got, want)
		}
	}
	for _, tm := range []time.Time{
		{}, time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 4, 0, 0, 120_000_000, time.UTC),
		time.Date(2026, 11, 30, 4, 0, 0, 1, time.FixedZone("x", 3600)), time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
	} {
		want, _ := json.Marshal(tm)
		if got := Time(nil, tm); string(got) != string(want) {
			t.Errorf("Time(%v) = %s, want %s", tm, got, want)
		}
	}
	b := Field([]byte("{"), "a")
	b = Int(b, -7)
	b = Field(b, "b")
	b = String(b, "x")
	if got := string(append(b, '}')); got != `{"a":-7,"b":"x"}` {
		t.Errorf("fields: %s", got)
	}
}

// A time encoding/json cannot write (a year past 9999) is written as null,
// which decodes as the zero time instead of failing the whole value.
func TestATimeBeyondRFC3339IsNull(t *testing.T) {
	b := Time([]byte(`{"at":`), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
	var v struct{ At time.Time }
	if err := json.Unmarshal(append(b, '}'), &v); err != nil || !v.At.IsZero() {
		t.Errorf("%s decodes as %v, %v; want the zero time", b, v.At, err)
	}
}
