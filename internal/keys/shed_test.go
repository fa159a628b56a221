package keys

import (
	"testing"
	"time"
)

// A chunk record's key parses back, nothing else parses as one, and the
// records of an instant sort by it, so a range of instants is a range of
// keys: ShedBetween holds the records of the ticks due in [from, to) and no
// other.
func TestShedRecordKeys(t *testing.T) {
	l := New(testPrefix)
	at := time.Date(2026, 11, 25, 16, 0, 5, 500_000_000, time.UTC)
	got, w, g, n, ok := l.ParseShedRecord(l.ShedRecord(at, "r1.694d", "g7", 12))
	if !ok || !got.Equal(at) || w != "r1.694d" || g != "g7" || n != 12 {
		t.Errorf("ParseShedRecord(ShedRecord(at, r1.694d, g7, 12)) = %v %q %q %d %v", got, w, g, n, ok)
	}
	for _, k := range []string{
		l.ShedAt(at), l.ShedAt(at) + "w/g", l.ShedAt(at) + "w/g/01", l.ShedAt(at) + "w/g/-1",
		l.ShedAt(at) + "/g/1", l.ShedAt(at) + "w//1", l.ShedAt(at) + "w/g/1/2",
		testPrefix + "shed/2026-11-25T16:00:05.5Z/w/g/1", l.ClaimMarker("w", at, "g", 1),
	} {
		if _, _, _, _, ok := l.ParseShedRecord(k); ok {
			t.Errorf("ParseShedRecord(%q) took it for a chunk record", k)
		}
	}
	from, to := at, at.Add(time.Second)
	start, end := l.ShedBetween(from, to)
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{
		{from.Add(-time.Nanosecond), false}, {from, true}, {from.Add(time.Nanosecond), true},
		{to.Add(-time.Nanosecond), true}, {to, false}, {to.Add(time.Minute), false},
	} {
		k := l.ShedRecord(tc.at, "w", "g", 0)
		if in := k >= start && k < end; in != tc.want {
			t.Errorf("a record due at %s in [%s, %s): %v, want %v", tc.at.Format(InstantFormat), from.Format(InstantFormat), to.Format(InstantFormat), in, tc.want)
		}
	}
}
