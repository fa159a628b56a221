package fault

import (
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
)

// accountSlack is G2's "few seconds" beyond starting_deadline + session_ttl.
const accountSlack = 5 * time.Second

// G2, every tick accounted: every tick of an @every job due in the checked
// range either reached the witness or got a record (skipped, missed, lost,
// cancelled, interrupted, ...) within starting_deadline + session_ttl +
// accountSlack of its due time. Unlike property 3 no failover window
// excuses a tick: a new leader has that long to account for the old one's.
// The range starts at TicksFrom (after the warm-up) and ends where a tick's
// bound would pass Now, so the edges are left out rather than guessed.
// A record's time is when the witness's watch saw it first written.
func checkAccounted(h *History, r *Report) {
	first := map[string]time.Time{} // run id -> first arrival at the witness
	for _, run := range h.Runs {
		if at, ok := first[run.RunID]; !ok || run.Start.Before(at) {
			first[run.RunID] = run.Start
		}
	}
	for _, j := range h.Jobs {
		if j.Every <= 0 {
			continue
		}
		within := j.StartingDeadline + h.SessionTTL + accountSlack
		n := 0
		for t := h.TicksFrom.Truncate(j.Every).Add(j.Every); !t.Add(within).After(h.Now); t = t.Add(j.Every) {
			r.TicksAccounted++
			id := runs.ID(j.Name, t)
			at, how := accountedAt(h, first, id)
			if !at.IsZero() && !at.After(t.Add(within)) {
				continue
			}
			if n++; n > 5 {
				continue
			}
			if at.IsZero() {
				r.violate("accounted: %s (due %s) neither reached the target nor was recorded (%s)", id, t.Format("15:04:05.000"), how)
				continue
			}
			r.violate("accounted: %s (due %s) was first %s %s after it was due; want within %s (starting_deadline %s + session_ttl %s + %s)",
				id, t.Format("15:04:05.000"), how, at.Sub(t).Round(time.Millisecond), within, j.StartingDeadline, h.SessionTTL, accountSlack)
		}
	}
}

// accountedAt is when tick id was first accounted for, and how: its first
// arrival at the witness or its record, whichever came first. A record
// the watch did not see written counts as accounted from the start.
func accountedAt(h *History, first map[string]time.Time, id string) (time.Time, string) {
	at, how := first[id], "started"
	rec, ok := h.Records[id]
	switch {
	case !ok && at.IsZero():
		return at, "no record"
	case !ok:
		return at, how
	case rec.Outcome == queuedOutcome && at.IsZero():
		return at, "still queued at the end"
	case rec.Outcome == queuedOutcome:
		return at, how
	}
	recAt, seen := h.RecordedAt[id]
	if !seen || recAt.IsZero() {
		return time.Unix(0, 0), "recorded " + string(rec.Outcome) + " (write not seen)"
	}
	if at.IsZero() || recAt.Before(at) {
		return recAt, "recorded " + string(rec.Outcome)
	}
	return at, how
}
