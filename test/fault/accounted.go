package fault

import (
	"time"

	"github.com/etcdsched/scheduler/internal/runs"
)

// Every tick accounted for: property 3 (eventually, failover windows
// excused) and G2 (in time, nothing excused).

// Property 3: every tick was run or recorded (skipped, missed, lost, ...);
// one that was neither is allowed only inside a failover window.
func checkTicks(h *History, jobs map[string]Job, r *Report) {
	ran := map[string]bool{}
	for _, run := range h.Runs {
		ran[run.RunID] = true
	}
	for _, j := range h.Jobs {
		if j.Every <= 0 {
			continue
		}
		first := time.Time{}
		for id, rec := range h.Records {
			if rec.Job == j.Name && rec.Trigger != runs.Manual && (first.IsZero() || rec.ScheduledAt.Before(first)) {
				first = rec.ScheduledAt
				_ = id
			}
		}
		for _, run := range h.Runs {
			if run.Job == j.Name && (first.IsZero() || run.ScheduledAt.Before(first)) {
				first = run.ScheduledAt
			}
		}
		if first.IsZero() {
			r.violate("ticks: job %s never ran nor was recorded", j.Name)
			continue
		}
		if first.Before(h.TicksFrom) {
			first = h.TicksFrom.Truncate(j.Every).Add(j.Every)
		}
		lost := 0
		for t := first; !t.After(h.TicksUntil); t = t.Add(j.Every) {
			r.TicksChecked++
			id := runs.ID(j.Name, t)
			if ran[id] {
				continue
			}
			if _, ok := h.Records[id]; ok {
				continue
			}
			inWindow := false
			for _, w := range h.Failover {
				if w.contains(t) {
					inWindow = true
				}
			}
			if inWindow {
				r.TicksLost++
				continue
			}
			if lost++; lost <= 5 {
				r.violate("ticks: %s neither ran nor was recorded, outside every failover window", id)
			}
		}
	}
}

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
