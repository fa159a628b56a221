package keys

import (
	"strconv"
	"strings"
	"time"
)

// Shed holds shed/<instant>/<worker>/<group>/<n>: the record of the ticks
// due at instant that a worker shed together from one assignment, one key
// for many ticks (docs/design-shed.md). The instant comes first, spelled
// as an assignment's (InstantFormat), so the records of an instant share
// a prefix and a range of instants is a range of keys.
func (l Layout) Shed() string { return l.Prefix + shedDir }

// ShedAt holds the chunk records of the ticks due at instant.
func (l Layout) ShedAt(instant time.Time) string {
	return l.Shed() + instant.UTC().Format(InstantFormat) + "/"
}

// ShedBetween is the key range [start, end) of the chunk records of the
// ticks due in [from, to).
func (l Layout) ShedBetween(from, to time.Time) (start, end string) {
	return l.ShedAt(from), l.ShedAt(to)
}

// ShedRecord is a chunk record of worker's assignment at instant in
// group; n tells apart those of one assignment (its writer uses the
// assignment's revision as it read it, which each chunk record changes).
func (l Layout) ShedRecord(instant time.Time, worker, group string, n int) string {
	return l.ShedAt(instant) + worker + "/" + group + "/" + strconv.Itoa(n)
}

// ParseShedRecord splits a chunk record's key; ok is false for any other
// key.
func (l Layout) ParseShedRecord(key string) (instant time.Time, worker, group string, n int, ok bool) {
	rest, found := strings.CutPrefix(key, l.Shed())
	if !found {
		return time.Time{}, "", "", 0, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[1] == "" || parts[2] == "" {
		return time.Time{}, "", "", 0, false
	}
	n, err := strconv.Atoi(parts[3])
	if err != nil || n < 0 || strconv.Itoa(n) != parts[3] {
		return time.Time{}, "", "", 0, false
	}
	instant, ok = parseInstant(parts[0])
	return instant, parts[1], parts[2], n, ok
}
