package jobs

import (
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/jobs/queue"
	"github.com/etcdsched/scheduler/internal/runs"
)

// A job's next_run is a tick that will run (docs/api.md): none when none
// will come, so that an operator reading "next run" is not told of a tick
// the scheduler will not start.

// nextRun is j's next tick after now by its schedule (after exclusions,
// within start_at..end_at): for a job paused until a time, the first tick
// at or after it (the ticks inside the pause do not run); for a job paused
// without an until, none (it runs again only once resumed).
func (jr *jobReader) nextRun(j *config.Job, paused bool, until time.Time) time.Time {
	sched, err := j.ParsedSchedule()
	if err != nil {
		return time.Time{}
	}
	from := jr.clock.Now()
	if paused {
		if until.IsZero() {
			return time.Time{}
		}
		// A tick at until runs: the pause is over then (pause.Marker).
		from = latest(from, until.Add(-time.Nanosecond))
	}
	return sched.Next(from)
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// queuedTick is the earliest scheduled tick of job queued ahead of its
// time, zero when there is none.
func (jr *jobReader) queuedTick(job string) time.Time {
	now := jr.clock.Now()
	var first time.Time
	jr.queue.List(func(q *queue.Item) bool {
		if q.Job == job && q.State == queue.Pending && q.Trigger == runs.Schedule && q.ScheduledAt.After(now) &&
			(first.IsZero() || q.ScheduledAt.Before(first)) {
			first = q.ScheduledAt
		}
		return false
	})
	return first
}
