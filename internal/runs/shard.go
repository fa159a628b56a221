package runs

import (
	"strconv"
	"strings"
)

// A tick of a sharded job (docs/design-sharded.md) is N shard runs, each a run of
// its own under the id <tick run id>#<k>; the tick's outcome is decided
// once, by the shard that ends last (the fan-in).

// ShardID is the id of shard k of the tick (or trigger) tickID.
func ShardID(tickID string, k int) string { return tickID + "#" + strconv.Itoa(k) }

// ShardOf splits a shard run's id into its tick's id and its index; ok is
// false for any other run id.
func ShardOf(runID string) (tickID string, k int, ok bool) {
	i := strings.LastIndexByte(runID, '#')
	if i < 0 || i == len(runID)-1 {
		return "", 0, false
	}
	k, err := strconv.Atoi(runID[i+1:])
	if err != nil || k < 0 || strconv.Itoa(k) != runID[i+1:] {
		return "", 0, false
	}
	return runID[:i], k, true
}

// severities orders the outcomes of a tick's shards, the mildest first: a
// tick's outcome is succeeded when every shard succeeded, otherwise the
// most severe of its shards'.
var severities = []Outcome{Succeeded, Missed, Skipped, Cancelled, Interrupted, Lost, TimedOut, Failed}

// Severity is o's place in the order of severities, one decimal digit
// (0: succeeded), so that the byte order of the digits is their order.
func Severity(o Outcome) byte {
	for i, s := range severities {
		if s == o {
			return byte('0' + i)
		}
	}
	return byte('0' + len(severities) - 1) // an unknown outcome counts as failed
}

// OfSeverity is the outcome whose Severity is d.
func OfSeverity(d byte) Outcome {
	i := int(d - '0')
	if i < 0 || i >= len(severities) {
		return Failed
	}
	return severities[i]
}

// Outcomes is every outcome a shard can end with, the mildest first.
func Outcomes() []Outcome { return append([]Outcome(nil), severities...) }

// Worst is the tick outcome of shard outcomes: the most severe.
func Worst(outcomes ...Outcome) Outcome {
	w := Succeeded
	for _, o := range outcomes {
		if Severity(o) > Severity(w) {
			w = o
		}
	}
	return w
}
