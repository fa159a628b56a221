package main

import (
	"errors"
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

// maxFires bounds the fire times of one job a preview computes: enough
// for an hourly job's year (8,760), so the next daylight-saving change of
// any schedule is in reach.
const maxFires = 10000

// window is the part of a job's future `scheduled next` shows: the ticks
// after from, at most n of them, and none after until when until is set.
type window struct {
	from, until time.Time
	n           int
}

// nextFires computes job's ticks in w, with the code the leader plans
// with: the job's ParsedSchedule().Next from the cursor, and JitterAt of
// the tick for the start time. More than maxFires ticks before w.until is
// an error: the caller asked for more than a preview holds.
func nextFires(j *config.Job, w window) (jobFires, error) {
	out := jobFires{Job: j.Name, Schedule: j.ScheduleText(), Timezone: j.Location().String(), Fires: []fire{}}
	if j.Jitter > 0 {
		out.Jitter = j.Jitter.String()
	}
	sched, err := j.ParsedSchedule()
	if err != nil {
		return out, fmt.Errorf("job %s: schedule %q: %w", j.Name, j.ScheduleText(), err)
	}
	loc := j.Location()
	for t := w.from; len(out.Fires) < w.n; {
		if t = sched.Next(t); t.IsZero() || (!w.until.IsZero() && t.After(w.until)) {
			return out, nil
		}
		f := fire{ScheduledAt: t.In(loc), ScheduledAtUTC: t.UTC()}
		if j.Jitter > 0 {
			f.DueAt = t.Add(j.JitterAt(t)).UTC()
		}
		out.Fires = append(out.Fires, f)
	}
	if !w.until.IsZero() {
		if t := sched.Next(out.Fires[len(out.Fires)-1].ScheduledAt); !t.IsZero() && !t.After(w.until) {
			return out, fmt.Errorf("%w: job %q fires more than %d times before --until %s: choose an earlier --until or use -n",
				errUsage, j.Name, maxFires, w.until.Format(time.RFC3339))
		}
	}
	return out, nil
}

// nextFlags are the command line of `scheduler next`.
type nextFlags struct {
	path, format, from, until string
	n                         int
	explain                   bool
}

// parse reads args into f and the window to show; now is the default
// --from. Every problem is a usage error naming the flag.
func (f *nextFlags) parse(args []string, help io.Writer, now time.Time) (pos []string, w window, err error) {
	fs := flag.NewFlagSet("scheduler next --config FILE [JOB] [--from TIME] [-n 5 | --until TIME] [--explain]", flag.ContinueOnError)
	fs.StringVar(&f.path, "config", "", "configuration `FILE` (required)")
	fs.IntVar(&f.n, "n", 5, fmt.Sprintf("how many fire times per job (1 to %d)", maxFires))
	fs.StringVar(&f.from, "from", "", "show the fire times after `TIME` (RFC3339, e.g. 2026-10-25T00:00:00+02:00; default now)")
	fs.StringVar(&f.until, "until", "", fmt.Sprintf("show every fire time up to `TIME` (RFC3339; at most %d a job) instead of -n", maxFires))
	fs.StringVar(&f.format, "o", "table", "output: table, wide (every column) or json")
	fs.BoolVar(&f.explain, "explain", false, "also list the ticks exclusions take out, with the rule of each")
	if pos, err = parseInterleaved(fs, args, help, nil, 0, 1); err != nil {
		return nil, w, err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	w = window{from: now, n: f.n}
	switch {
	case f.path == "":
		return nil, w, fmt.Errorf("%w: --config is required", errUsage)
	case f.n < 1 || f.n > maxFires:
		return nil, w, fmt.Errorf("%w: -n %d: want 1 to %d", errUsage, f.n, maxFires)
	case f.format != "table" && f.format != "wide" && f.format != "json":
		return nil, w, fmt.Errorf("%w: -o %q: want table, wide or json", errUsage, f.format)
	case set["n"] && set["until"]:
		return nil, w, fmt.Errorf("%w: -n and --until both given: use one (-n counts fire times, --until ends them at a time)", errUsage)
	}
	if w.from, err = flagTime("--from", f.from, now); err != nil {
		return nil, w, err
	}
	if f.until != "" {
		if w.until, err = flagTime("--until", f.until, time.Time{}); err != nil {
			return nil, w, err
		}
		if !w.until.After(w.from) {
			return nil, w, fmt.Errorf("%w: --until %s is not after --from %s", errUsage, f.until, w.from.Format(time.RFC3339))
		}
		w.n = maxFires
	}
	return pos, w, nil
}

// flagTime parses an RFC3339 time given to flag name; empty is def.
func flagTime(name, v string, def time.Time) (time.Time, error) {
	if v == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s %q is not a time: want RFC3339 with a zone, e.g. 2026-10-25T00:00:00+02:00 or 2026-10-24T22:00:00Z", errUsage, name, v)
	}
	return t, nil
}

// nextCommand: scheduler next --config FILE [JOB] [--from T] [-n 5 |
// --until T]. Offline: it reads the file, not the cluster. now is the
// default --from; main passes the clock, tests a fixed date.
func nextCommand(args []string, stdout, stderr io.Writer, now time.Time) int {
	var f nextFlags
	pos, w, err := f.parse(args, stdout, now)
	if err != nil {
		return usageError(stderr, err)
	}
	cfg, err := config.Load(f.path)
	if code, failed := loadFailed(stderr, err); failed {
		return code
	}
	jobs := cfg.Jobs
	if len(pos) == 1 {
		j := cfg.Job(pos[0])
		if j == nil {
			hint := "leave JOB out to see every job's"
			if near := cfg.NearestJob(pos[0]); near != "" {
				hint = fmt.Sprintf("did you mean %q?", near)
			}
			fmt.Fprintf(stderr, "scheduler: %s: no job %q: %s\n", f.path, pos[0], hint)
			return exitFail
		}
		jobs = []config.Job{*j}
	}
	all := make([]jobFires, 0, len(jobs))
	for i := range jobs {
		fires, err := nextFires(&jobs[i], w)
		if f.explain {
			fires, err = explainFires(&jobs[i], w)
		}
		if errors.Is(err, errUsage) {
			return usageError(stderr, err)
		}
		if err != nil {
			fmt.Fprintf(stderr, "scheduler: %v\n", err)
			return exitFail
		}
		all = append(all, fires)
	}
	if f.format == "json" {
		err = writeRaw(stdout, all)
	} else {
		err = nextTable(all, viewOf(stdout, f.format == "wide")).write(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "scheduler: %v\n", err)
		return exitFail
	}
	return exitOK
}

// localFormat shows a tick as the job's wall clock with its offset and
// zone name: on a daylight-saving day the offset is what tells the two
// 02:30s apart.
const localFormat = "2006-01-02 15:04:05 -07:00 MST"

// nextTable: by default the job and each tick in its own time and in
// UTC, and the jitter's delay when a job has one; -o wide adds the
// schedule, time zone and due time.
func nextTable(all []jobFires, v view) *table {
	jitter, explain := false, excludes(all)
	for _, j := range all {
		jitter = jitter || j.Jitter != ""
	}
	header := []string{"JOB", "SCHEDULED AT (JOB TIME)", "SCHEDULED AT (UTC)", "SCHEDULE", "TIMEZONE"}
	if jitter {
		header = append(header, "JITTER", "DUE (UTC, WITH JITTER)")
	}
	if explain {
		header = append(header, "EXCLUDED BY")
	}
	t := newTable(v, header...).shrink(3).wide(3, 4)
	if jitter {
		t.wide(6)
	}
	for _, j := range all {
		if len(j.Fires) == 0 {
			row := []string{j.Job, "never (triggered only)", "-", j.Schedule, j.Timezone}
			if jitter {
				row = append(row, "-", "-")
			}
			if explain {
				row = append(row, "-")
			}
			t.add(row...)
			continue
		}
		for _, f := range j.Fires {
			row := []string{j.Job, f.ScheduledAt.Format(localFormat), f.ScheduledAtUTC.Format(time.RFC3339), j.Schedule, j.Timezone}
			if jitter {
				delay, due := "-", "-"
				if !f.DueAt.IsZero() {
					delay = "+" + f.DueAt.Sub(f.ScheduledAtUTC).Round(time.Millisecond).String()
					due = f.DueAt.Format(time.RFC3339Nano)
				}
				row = append(row, delay, due)
			}
			if explain {
				row = append(row, orDash(f.ExcludedBy))
			}
			t.add(row...)
		}
	}
	return t
}
