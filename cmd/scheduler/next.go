package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/etcdsched/scheduler/config"
)

// fire is one tick of a job as `scheduler next` shows it: the tick is the
// run's scheduled_at; due is when the leader lets it start, the tick plus
// the job's jitter, and is set only for a job with jitter.
type fire struct {
	ScheduledAt    time.Time `json:"scheduled_at"`
	ScheduledAtUTC time.Time `json:"scheduled_at_utc"`
	DueAt          time.Time `json:"due_at,omitzero"`
	// ExcludedBy names the rule that excluded the tick (next --explain).
	ExcludedBy string `json:"excluded_by,omitempty"`
}

// jobFires is one job's next ticks; none for a job that only runs when
// triggered.
type jobFires struct {
	Job      string `json:"job"`
	Schedule string `json:"schedule"`
	Timezone string `json:"timezone"`
	Jitter   string `json:"jitter,omitempty"`
	Fires    []fire `json:"fires"`
}

// nextFires computes the next n ticks of job after now, with the code the
// leader plans with: the job's ParsedSchedule().Next from the cursor, and
// JitterAt of the tick for the start time.
func nextFires(j *config.Job, now time.Time, n int) (jobFires, error) {
	out := jobFires{Job: j.Name, Schedule: j.ScheduleText(), Timezone: j.Location().String(), Fires: []fire{}}
	if j.Jitter > 0 {
		out.Jitter = j.Jitter.String()
	}
	sched, err := j.ParsedSchedule()
	if err != nil {
		return out, fmt.Errorf("job %s: schedule %q: %w", j.Name, j.ScheduleText(), err)
	}
	loc := j.Location()
	for t := now; len(out.Fires) < n; {
		if t = sched.Next(t); t.IsZero() {
			break
		}
		f := fire{ScheduledAt: t.In(loc), ScheduledAtUTC: t.UTC()}
		if j.Jitter > 0 {
			f.DueAt = t.Add(j.JitterAt(t)).UTC()
		}
		out.Fires = append(out.Fires, f)
	}
	return out, nil
}

// nextCommand: scheduler next --config FILE [JOB] [-n 5] [--explain]. Offline: it
// reads the file, not the cluster. now is the moment the ticks follow; main
// passes the clock, tests a fixed date.
func nextCommand(args []string, stdout, stderr io.Writer, now time.Time) int {
	var path, format string
	var n int
	var explain bool
	fs := flag.NewFlagSet("scheduler next --config FILE [JOB] [-n 5] [--explain]", flag.ContinueOnError)
	fs.StringVar(&path, "config", "", "configuration `FILE` (required)")
	fs.IntVar(&n, "n", 5, "how many fire times per job (1 to 1000)")
	fs.StringVar(&format, "o", "table", "output: table or json")
	fs.BoolVar(&explain, "explain", false, "also list the ticks exclusions take out, with the rule of each")
	pos, err := parseInterleaved(fs, args, stderr, nil, 0, 1)
	switch {
	case err != nil:
	case path == "":
		err = fmt.Errorf("%w: --config is required", errUsage)
	case n < 1 || n > 1000:
		err = fmt.Errorf("%w: -n %d: want 1 to 1000", errUsage, n)
	case format != "table" && format != "json":
		err = fmt.Errorf("%w: -o %q: want table or json", errUsage, format)
	}
	if err != nil {
		return usageError(stderr, err)
	}
	cfg, err := config.Load(path)
	if code, failed := loadFailed(stderr, err); failed {
		return code
	}
	jobs := cfg.Jobs
	if len(pos) == 1 {
		j := cfg.Job(pos[0])
		if j == nil {
			fmt.Fprintf(stderr, "scheduler: %s: no job %q\n", path, pos[0])
			return exitFail
		}
		jobs = []config.Job{*j}
	}
	all := make([]jobFires, 0, len(jobs))
	for i := range jobs {
		fires := nextFires
		if explain {
			fires = explainFires
		}
		f, err := fires(&jobs[i], now, n)
		if err != nil {
			fmt.Fprintf(stderr, "scheduler: %v\n", err)
			return exitFail
		}
		all = append(all, f)
	}
	if format == "json" {
		b, err := json.MarshalIndent(all, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "scheduler: %v\n", err)
			return exitFail
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}
	if err := nextTable(all, terminalWidth(stdout)).write(stdout); err != nil {
		fmt.Fprintf(stderr, "scheduler: %v\n", err)
		return exitFail
	}
	return exitOK
}

// localFormat shows a tick as the job's wall clock with its offset and
// zone name: on a daylight-saving day the offset is what tells the two
// 02:30s apart.
const localFormat = "2006-01-02 15:04:05 -07:00 MST"

func nextTable(all []jobFires, width int) *table {
	jitter, explain := false, excludes(all)
	for _, j := range all {
		jitter = jitter || j.Jitter != ""
	}
	header := []string{"JOB", "SCHEDULE", "TIMEZONE", "SCHEDULED AT (JOB TIME)", "SCHEDULED AT (UTC)"}
	if jitter {
		header = append(header, "DUE (UTC, WITH JITTER)")
	}
	if explain {
		header = append(header, "EXCLUDED BY")
	}
	t := newTable(width, header...).shrink(1)
	for _, j := range all {
		if len(j.Fires) == 0 {
			row := []string{j.Job, j.Schedule, j.Timezone, "never (triggered only)", "-"}
			if jitter {
				row = append(row, "-")
			}
			if explain {
				row = append(row, "-")
			}
			t.add(row...)
			continue
		}
		for _, f := range j.Fires {
			row := []string{j.Job, j.Schedule, j.Timezone, f.ScheduledAt.Format(localFormat), f.ScheduledAtUTC.Format(time.RFC3339)}
			if jitter {
				due := "-"
				if !f.DueAt.IsZero() {
					due = f.DueAt.Format(time.RFC3339Nano)
				}
				row = append(row, due)
			}
			if explain {
				row = append(row, orDash(f.ExcludedBy))
			}
			t.add(row...)
		}
	}
	return t
}
