package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/etcdsched/scheduler/client"
	"github.com/etcdsched/scheduler/config"
)

// jobsCommand: scheduler jobs [NAME] | scheduler jobs --removed.
func jobsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var removed bool
	var team string
	return clientCommand(ctx, "scheduler jobs [NAME] [--team TEAM] | scheduler jobs --removed", args, stdout, stderr, 0, 1,
		func(fs *flag.FlagSet) {
			fs.BoolVar(&removed, "removed", false, "list the jobs removed from the config whose history is still kept")
			fs.StringVar(&team, "team", "", "only the jobs of `TEAM` (docs/configuration.md, \"Teams and tokens\")")
		},
		func(ctx context.Context, c *client.Client, pos []string, out output) error {
			if removed {
				if len(pos) > 0 {
					return fmt.Errorf("%w: --removed lists every removed job; read one's history with scheduler runs %s", errUsage, pos[0])
				}
				return removedJobs(ctx, c, out)
			}
			var list []client.Job
			if len(pos) == 1 {
				j, err := c.Job(ctx, pos[0])
				if err != nil {
					return err
				}
				if out.json {
					return writeRaw(out.stdout, j.Raw)
				}
				list = []client.Job{j}
			} else {
				var err error
				if list, err = c.Jobs(ctx); err != nil {
					return err
				}
				if team != "" {
					list = slices.DeleteFunc(list, func(j client.Job) bool { return j.Team != team })
				}
				if out.json {
					return writeRaw(out.stdout, raws(list, func(j client.Job) json.RawMessage { return j.Raw }))
				}
			}
			return jobsTable(out.view, list).write(out.stdout)
		})
}

// jobsTable: by default what an operator scans for (when, how it went,
// how busy, and OVERDUE after the last outcome of an overdue job); -o wide adds the target, time zone, pause flag with its
// until and reason, last run's time, runs queued ahead and the
// concurrency key. Times are never cut: a paused job's NEXT RUN says
// "paused" and its until, its reason is free text and waits for -o wide.
// TEAM gives way when a row cannot fit otherwise (a long name and a busy
// keyed job): names and times stay whole; -o wide and --team keep it.
func jobsTable(v view, list []client.Job) *table {
	t := newTable(v, "NAME", "TEAM", "SCHEDULE", "NEXT RUN", "LAST", "RUNNING", "PENDING",
		"TARGET", "TIMEZONE", "PAUSED", "LAST RUN", "AHEAD", "KEY").shrink(2, 12).wide(7, 8, 9, 10, 11, 12).optional(1)
	for _, j := range list {
		last, outcome := "-", "-"
		if j.LastRun != nil {
			last, outcome = stamp(j.LastRun.ScheduledAt), string(j.LastRun.Outcome)
		}
		if j.Overdue {
			// Not succeeded when it should have (docs/operations.md#overdue).
			outcome += " OVERDUE"
		}
		next := stamp(j.NextRun)
		if j.Paused {
			next = "paused"
			if !j.PausedUntil.IsZero() {
				next += " until " + stamp(j.PausedUntil)
			}
		}
		t.add(j.Name, cellOr(j.Team), j.Spec.ScheduleText(), next, outcome, runningCell(j), strconv.Itoa(j.Pending),
			targetOf(&j.Spec), j.Spec.Timezone, pausedCell(j), last, strconv.Itoa(j.Scheduled), j.Spec.ConcurrencyKey)
	}
	return t
}

// cellOr shows an empty value as "-".
func cellOr(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// targetOf is "http" or "exec", whichever the job declares.
func targetOf(j *config.Job) string {
	switch {
	case j.HTTP != nil:
		return "http"
	case j.Exec != nil:
		return "exec"
	}
	return ""
}

// runningCell is a job's running runs against its limit; a keyed job's
// limit holds per key, so "2/1 per key" reads as two keys busy, not as a
// limit broken.
func runningCell(j client.Job) string {
	cell := fmt.Sprintf("%d/%d", j.Running, j.MaxConcurrency)
	if j.Spec.ConcurrencyKey != "" {
		cell += " per key"
	}
	return cell
}

// removedJobs prints the removed jobs whose history is kept.
func removedJobs(ctx context.Context, c *client.Client, out output) error {
	list, err := c.RemovedJobs(ctx)
	if err != nil {
		return err
	}
	if out.json {
		return writeRaw(out.stdout, list)
	}
	t := newTable(out.view, "NAME", "REMOVED AT")
	for _, j := range list {
		t.add(j.Name, stamp(j.RemovedAt))
	}
	return t.write(out.stdout)
}

// pausedCell is "no", or "yes" with the pause's until and reason.
func pausedCell(j client.Job) string {
	if !j.Paused {
		return "no"
	}
	s := "yes"
	if !j.PausedUntil.IsZero() {
		s += " until " + stamp(j.PausedUntil)
	}
	if j.PauseReason != "" {
		s += ": " + j.PauseReason
	}
	return s
}

// inputCell is a run's input for a table: compact, and short even on a
// pipe, since an input may be 64 KiB.
func inputCell(in json.RawMessage) string {
	const most = 60
	if len(in) == 0 || string(in) == "null" {
		return "-"
	}
	var b []byte
	if compact, err := json.Marshal(in); err == nil {
		b = compact
	} else {
		b = in
	}
	return cut(string(b), most)
}

// runsCommand: scheduler runs JOB [--limit N] [--before RUN_ID].
func runsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var limit int
	var before, team string
	return clientCommand(ctx, "scheduler runs JOB [--limit N] [--before RUN_ID] [--team TEAM]", args, stdout, stderr, 1, 1,
		func(fs *flag.FlagSet) {
			fs.IntVar(&limit, "limit", 20, "how many runs, newest first (1 to 1000)")
			fs.StringVar(&before, "before", "", "only runs recorded before `RUN_ID`'s (the page further back)")
			fs.StringVar(&team, "team", "", "only runs of `TEAM`'s jobs: none when JOB is another team's")
		},
		func(ctx context.Context, c *client.Client, pos []string, out output) error {
			if limit < 1 || limit > 1000 {
				return fmt.Errorf("%w: --limit %d: want 1 to 1000", errUsage, limit)
			}
			list, err := c.Runs(ctx, pos[0], limit, before)
			if err != nil {
				return err
			}
			if team != "" {
				list = slices.DeleteFunc(list, func(r client.Run) bool { return r.Team != team })
			}
			if out.json {
				return writeRaw(out.stdout, raws(list, func(r client.Run) json.RawMessage { return r.Raw }))
			}
			if list, err = byTick(ctx, c, list); err != nil {
				return err
			}
			return runTable(out.view, list).write(out.stdout)
		})
}

// runTable: by default the run, its job's team once a listed run has one
// and the row has room for it (the same on every row, it gives way to the
// run id), how it ended and why; -o wide adds the team always ("-" for
// the main file's jobs, as scheduler jobs), when and where it ran, what
// the target answered and, once a listed run has one, the input.
func runTable(v view, list []client.Run) *table {
	withInput, withShards, teamed := false, false, false
	for _, r := range list {
		withInput = withInput || inputCell(r.Input) != "-"
		withShards = withShards || len(r.Shards) > 0
		teamed = teamed || r.Team != ""
	}
	header := []string{"RUN ID", "TEAM", "OUTCOME", "TOOK", "ERROR", "TRIGGER", "SCHEDULED AT", "STARTED AT", "EXIT", "HOLDER"}
	if withShards {
		// By default, after OUTCOME: how far each tick got.
		header = slices.Insert(header, 3, "SHARDS")
	}
	if withInput {
		header = append(header, "INPUT")
	}
	d := 0 // the columns after SHARDS move one right
	if withShards {
		d = 1
	}
	t := newTable(v, header...).shrink(4+d, 10+d).wide(5+d, 6+d, 7+d, 8+d, 9+d, 10+d).optional(1)
	if !teamed {
		t.wide(1)
	}
	for _, r := range list {
		row := []string{r.RunID, cellOr(r.Team), string(r.Outcome), took(r.StartedAt, r.EndedAt), r.Error,
			string(r.Trigger), stamp(r.ScheduledAt), stamp(r.StartedAt), exitCell(r), r.Holder}
		if withShards {
			row = slices.Insert(row, 3, shardsCell(r))
		}
		if withInput {
			row = append(row, inputCell(r.Input))
		}
		t.add(row...)
	}
	return t
}

// exitCell is what the target answered: an exit code or an HTTP status.
func exitCell(r client.Run) string {
	switch {
	case r.ExitCode != nil:
		return strconv.Itoa(*r.ExitCode)
	case r.HTTPStatus != 0:
		return "HTTP " + strconv.Itoa(r.HTTPStatus)
	}
	return "-"
}

// leaderCommand: scheduler leader.
func leaderCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return readCommand(ctx, "scheduler leader", args, stdout, stderr, (*client.Client).Leader,
		func(l client.Leader) any { return l.Raw },
		func(out output, l client.Leader) error { return leaderTable(out.view, l).write(out.stdout) })
}

// membersCommand: scheduler members.
func membersCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return readCommand(ctx, "scheduler members", args, stdout, stderr, (*client.Client).Members,
		func(list []client.Member) any {
			return raws(list, func(m client.Member) json.RawMessage { return m.Raw })
		},
		func(out output, list []client.Member) error { return membersTable(out.view, list).write(out.stdout) })
}

func leaderTable(v view, l client.Leader) *table {
	t := newTable(v, "ID", "API ADDR", "SINCE", "REVISION")
	t.add(l.ID, l.APIAddr, stamp(l.Since), strconv.FormatInt(l.Revision, 10))
	return t
}

// membersTable: a long development version is cut to fit; -o wide adds
// when each replica started.
func membersTable(v view, list []client.Member) *table {
	t := newTable(v, "ID", "API ADDR", "VERSION", "CONFIG HASH", "LEADER", "STARTED AT").shrink(2).wide(5)
	for _, m := range list {
		t.add(m.ID, m.APIAddr, m.Version, m.ConfigHash, strconv.FormatBool(m.IsLeader), stamp(m.StartedAt))
	}
	return t
}
