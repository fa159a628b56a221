package leader

import (
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/schedule"
)

const (
	// lateTolerance: a tick whose start time passed longer ago than this
	// (or than the interval to the next tick, if shorter: once the next
	// tick is due too, this one was missed) when the leader first looks at
	// it was missed during a leader gap, and the job's catch_up policy
	// decides. In steady state ticks are materialized ahead of time and
	// are never late.
	lateTolerance = time.Second
	// maxCatchUp bounds the runs one job gets from one catch-up.
	maxCatchUp = 100
	// maxMissedRecords bounds the missed records written in one pass; the
	// history keeps at most history_limit records anyway.
	maxMissedRecords = 100
	// maxScan bounds how many ticks one pass enumerates; a longer backlog
	// (a 100ms job after a day away) jumps to the starting deadline.
	maxScan = 10_000
)

// tickAction says what happens to a tick.
type tickAction int

const (
	queueTick tickAction = iota // becomes a queue entry
	missTick                    // becomes a missed record
)

type plannedTick struct {
	At        time.Time // the tick: scheduled_at and the run id
	NotBefore time.Time // the tick plus the job's jitter
	Action    tickAction
	CatchUp   bool // a late tick run by the catch_up policy
}

// plan is what one pass does for one job, in tick order. Cursor is the
// last tick it covers, including ticks only counted in Dropped.
type plan struct {
	Ticks   []plannedTick
	Cursor  time.Time
	Dropped int // missed ticks counted but not recorded
}

// keepFirst cuts p to its first n ticks, its cursor to the last kept; it
// reports whether it cut any (a pass bounded by farCap, leanMaxTicks).
func (p *plan) keepFirst(n int) bool {
	if n >= len(p.Ticks) {
		return false
	}
	p.Ticks = p.Ticks[:n]
	p.Cursor = p.Ticks[n-1].At
	return true
}

// planTicks decides, for the ticks after cursor up to now+lookahead, which
// become runs and which are recorded missed. A zero cursor (a job never
// scheduled) starts at now: a new job does not catch up on its past.
func planTicks(job *config.Job, sched schedule.Schedule, cursor, now time.Time, lookahead time.Duration) plan {
	if cursor.IsZero() {
		cursor = now
	}
	all, p := scanTicks(job, sched, cursor, now, lookahead)
	return catchUp(job, all, p, now)
}

// classified is a tick as scanTicks found it: late ticks are left to the
// catch_up policy.
type classified struct {
	plannedTick
	late bool
}

// scanTicks enumerates the ticks after cursor up to now+lookahead and
// classifies them: past the starting deadline (missed), late, or on time.
// The plan it returns has the cursor, and the ticks dropped by a jump
// over a backlog longer than maxScan.
func scanTicks(job *config.Job, sched schedule.Schedule, cursor, now time.Time, lookahead time.Duration) ([]classified, plan) {
	deadline := job.StartingDeadline.D()
	horizon := now.Add(lookahead)
	p := plan{Cursor: cursor}
	var all []classified
	scanned := 0
	next := sched.Next(cursor)
	for t := next; !t.IsZero() && !t.After(horizon); t = next {
		next = sched.Next(t)
		if scanned++; scanned > maxScan {
			// Everything before the deadline boundary is missed anyway;
			// jump there instead of enumerating it.
			if boundary := now.Add(-deadline - job.Jitter.D()); t.Before(boundary) {
				p.Dropped += len(all) + 1
				all, scanned = all[:0], 0
				next = sched.Next(boundary)
				continue
			}
		}
		c := classified{plannedTick: plannedTick{At: t, NotBefore: t.Add(job.JitterAt(t))}}
		p.Cursor = t
		switch age := now.Sub(c.NotBefore); {
		case age > deadline:
			c.Action = missTick
		case age > lateTolerance || (!next.IsZero() && age > next.Sub(t)):
			c.late = true
		}
		all = append(all, c)
	}
	return all, p
}

// catchUp applies the job's catch_up policy to the scanned ticks: the
// newest keepLate late ticks run, the rest are missed, and the oldest
// missed beyond maxMissedRecords are only counted in p.Dropped.
func catchUp(job *config.Job, all []classified, p plan, now time.Time) plan {
	lateCount := 0
	for _, c := range all {
		if c.late {
			lateCount++
		}
	}
	keepLate := 0
	switch job.CatchUp {
	case config.CatchUpAll:
		keepLate = min(lateCount, maxCatchUp)
	case config.CatchUpLatest:
		keepLate = min(lateCount, 1)
	}
	missedCount := lateCount - keepLate
	for _, c := range all {
		if c.Action == missTick {
			missedCount++
		}
	}
	skipMissed := max(0, missedCount-maxMissedRecords) // oldest missed, not recorded
	p.Dropped += skipMissed
	seenLate := 0
	caughtUp := false
	for _, c := range all {
		if c.late {
			seenLate++
			if seenLate <= lateCount-keepLate {
				c.Action = missTick
			} else {
				c.CatchUp, caughtUp = true, true
			}
		} else if caughtUp && c.Action == queueTick && !c.NotBefore.After(now) {
			// Due together with the caught-up ticks: take turns with them.
			c.CatchUp = true
		}
		if c.Action == missTick && skipMissed > 0 {
			skipMissed--
			continue
		}
		p.Ticks = append(p.Ticks, c.plannedTick)
	}
	return p
}
