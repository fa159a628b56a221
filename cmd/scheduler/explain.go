package main

import (
	"github.com/etcdsched/scheduler/config"
	"github.com/etcdsched/scheduler/internal/schedule"
)

// explainFires is nextFires for `next --explain`: the ticks of w that
// fire (the next w.n, none after w.until when it is set) and, between
// them, the ticks the job's exclusions take out, each with the rule that
// took it out.
func explainFires(j *config.Job, w window) (jobFires, error) {
	out, err := nextFires(j, window{from: w.from})
	if err != nil {
		return out, err
	}
	sched, err := j.ParsedSchedule()
	if err != nil {
		return out, err // nextFires has reported it already
	}
	u, ok := sched.(*schedule.Union)
	if !ok {
		return nextFires(j, w) // nothing to exclude
	}
	if _, err := nextFires(j, w); err != nil {
		return out, err // more than a preview holds before --until
	}
	loc := j.Location()
	for _, tick := range u.Explain(w.from, w.n, w.until) {
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
