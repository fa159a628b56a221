package main

import (
	"time"

	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/schedule"
)

// explainFires is nextFires for `next --explain`: the next n ticks that
// fire and, between them, the ticks the job's exclusions take out, each
// with the rule that took it out.
func explainFires(j *config.Job, now time.Time, n int) (jobFires, error) {
	out, err := nextFires(j, window{from: now})
	if err != nil {
		return out, err
	}
	sched, err := j.ParsedSchedule()
	if err != nil {
		return out, err // nextFires has reported it already
	}
	u, ok := sched.(*schedule.Union)
	if !ok {
		return nextFires(j, window{from: now, n: n}) // nothing to exclude
	}
	loc := j.Location()
	for _, tick := range u.Explain(now, n) {
		f := fire{ScheduledAt: tick.At.In(loc), ScheduledAtUTC: tick.At.UTC(), ExcludedBy: tick.ExcludedBy}
		if tick.ExcludedBy == "" && j.Jitter > 0 {
			f.DueAt = tick.At.Add(j.JitterAt(tick.At)).UTC()
		}
		out.Fires = append(out.Fires, f)
	}
	return out, nil
}

// excludes reports whether any tick is an excluded one, which gives the
// table its EXCLUDED BY column.
func excludes(all []jobFires) bool {
	for _, j := range all {
		for _, f := range j.Fires {
			if f.ExcludedBy != "" {
				return true
			}
		}
	}
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
