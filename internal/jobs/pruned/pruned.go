// Package pruned keeps, per job, the stretches of its scheduled ticks whose
// records may have been deleted (docs/design-leader.md#backfill-never-reruns-a-tick):
// a backfill takes a tick inside one as existing, so that a tick that ran
// is not queued again once its record is pruned past history_limit.
//
// A stretch [from, to] says: when it was written, every tick of the job's
// schedule in it had a record (or was one the writer was deleting), so a
// tick in it with no record now had one. The leader's prune writes the
// stretches of the records it deletes, before deleting them (Grow); a
// removed job's cleanup writes the span of every record it deletes (Add).
// Ticks of the schedule with no record (a paused stretch, a schedule
// changed since) break a stretch, so a backfill still queues them.
package pruned

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
)

// MaxStretches bounds a job's stretches: past it, the two oldest merge,
// the ticks between them counted as existing. A backfill then refuses (as
// skipped_existing) never-run ticks there, and reruns none; the oldest
// gaps are the ones least likely to be backfilled.
const MaxStretches = 64

// Stretch is a closed range of ticks [From, To].
type Stretch struct{ From, To time.Time }

// Stretches are a job's stretches, sorted and disjoint.
type Stretches []Stretch

// Covers reports whether t is in a stretch.
func (s Stretches) Covers(t time.Time) bool {
	i, _ := slices.BinarySearchFunc(s, t, func(st Stretch, t time.Time) int { return st.To.Compare(t) })
	return i < len(s) && !t.Before(s[i].From)
}

// CoversAll reports whether every one of ts is in a stretch.
func (s Stretches) CoversAll(ts []time.Time) bool {
	for _, t := range ts {
		if !s.Covers(t) {
			return false
		}
	}
	return true
}

// Grow returns s with every tick of deleted in a stretch, and whether it
// changed. next is the job's schedule (the first tick strictly after its
// argument; zero: none); deleted and kept are the ticks of the records
// being deleted and of those kept, in any order. A new stretch runs over
// the deleted ticks and the kept ones next to them for as long as no tick
// of the schedule between two of them lacks a record, so that the records
// kept now need no write when their turn to be deleted comes. With no
// schedule (nil: a job gone from the config) the deleted ticks make one
// stretch, from the earliest to the latest.
func (s Stretches) Grow(next func(time.Time) time.Time, deleted, kept []time.Time) (Stretches, bool) {
	if s.CoversAll(deleted) {
		return s, false
	}
	if next == nil {
		return s.Add(slices.MinFunc(deleted, time.Time.Compare), slices.MaxFunc(deleted, time.Time.Compare)), true
	}
	all := append(slices.Clone(deleted), kept...)
	slices.SortFunc(all, time.Time.Compare)
	all = slices.CompactFunc(all, time.Time.Equal)
	del := map[int64]bool{}
	for _, t := range deleted {
		del[t.UnixNano()] = true
	}
	out := slices.Clone(s)
	start, needed := 0, false
	for i, t := range all {
		needed = needed || (del[t.UnixNano()] && !s.Covers(t))
		if i+1 < len(all) && !gapBetween(next, t, all[i+1]) {
			continue
		}
		if needed {
			out = append(out, Stretch{all[start], t})
		}
		start, needed = i+1, false
	}
	return out.merged(next), true
}

// Add returns s with [from, to] in it: a removed job's deleted records,
// whose schedule is not known any more.
func (s Stretches) Add(from, to time.Time) Stretches {
	return append(slices.Clone(s), Stretch{from, to}).merged(nil)
}

// gapBetween reports whether a tick of the schedule lies strictly between
// a and b (a before b). With no schedule, any distance is a gap.
func gapBetween(next func(time.Time) time.Time, a, b time.Time) bool {
	if next == nil {
		return true
	}
	n := next(a)
	return !n.IsZero() && n.Before(b)
}

// merged sorts s and joins the stretches that overlap or have no tick of
// the schedule between them; then, past MaxStretches, the oldest.
func (s Stretches) merged(next func(time.Time) time.Time) Stretches {
	slices.SortFunc(s, func(a, b Stretch) int { return a.From.Compare(b.From) })
	var out Stretches
	for _, st := range s {
		if n := len(out); n > 0 && (!st.From.After(out[n-1].To) || !gapBetween(next, out[n-1].To, st.From)) {
			if st.To.After(out[n-1].To) {
				out[n-1].To = st.To
			}
			continue
		}
		out = append(out, st)
	}
	if n := len(out) - MaxStretches; n > 0 {
		out[n].From = out[0].From
		out = out[n:]
	}
	return out
}

// stored is the value of pruned/<job>: pairs of ticks, as in run ids.
type stored [][2]string

// Encode is s as stored.
func (s Stretches) Encode() string {
	v := make(stored, len(s))
	for i, st := range s {
		v[i] = [2]string{st.From.UTC().Format(runs.TimeFormat), st.To.UTC().Format(runs.TimeFormat)}
	}
	b, _ := json.Marshal(v) // strings only: cannot fail
	return string(b)
}

// Decode reads a stored value; an error says what is wrong with it.
func Decode(b []byte) (Stretches, error) {
	var v stored
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("pruned stretches %q: %w", b, err)
	}
	out := make(Stretches, 0, len(v))
	for _, p := range v {
		from, err1 := time.Parse(runs.TimeFormat, p[0])
		to, err2 := time.Parse(runs.TimeFormat, p[1])
		if err1 != nil || err2 != nil || to.Before(from) {
			return nil, fmt.Errorf("pruned stretches %q: %q to %q is not a range of ticks", b, p[0], p[1])
		}
		out = append(out, Stretch{from.UTC(), to.UTC()})
	}
	return out.merged(nil), nil
}

// Everything is what a value that cannot be read counts as: every tick
// may have run, so a backfill queues none until it is mended.
func Everything() Stretches {
	return Stretches{{time.Time{}, time.Unix(1<<62, 0).UTC()}}
}
