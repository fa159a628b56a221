package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/etcdsched/scheduler/internal/client"
)

// raws collects the API's own JSON of a list, for -o json.
func raws[T any](list []T, raw func(T) json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(list))
	for _, v := range list {
		out = append(out, raw(v))
	}
	return out
}

// jobsCommand: scheduler jobs [NAME] | scheduler jobs --removed.
func jobsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var removed bool
	return clientCommand(ctx, "scheduler jobs [NAME] | scheduler jobs --removed", args, stdout, stderr, 0, 1,
		func(fs *flag.FlagSet) {
			fs.BoolVar(&removed, "removed", false, "list the jobs removed from the config whose history is still kept")
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
				if out.json {
					return writeRaw(out.stdout, raws(list, func(j client.Job) json.RawMessage { return j.Raw }))
				}
			}
			t := newTable(out.width, "NAME", "TARGET", "SCHEDULE", "TIMEZONE", "PAUSED", "NEXT RUN", "LAST RUN", "OUTCOME", "RUNNING", "PENDING", "AHEAD").shrink(2, 4)
			for _, j := range list {
				last, outcome := "-", "-"
				if j.LastRun != nil {
					last, outcome = stamp(j.LastRun.ScheduledAt), j.LastRun.Outcome
				}
				t.add(j.Name, j.Spec.Target(), j.Spec.Schedule, j.Spec.Timezone, pausedCell(j), stamp(j.NextRun),
					last, outcome, fmt.Sprintf("%d/%d", j.Running, j.MaxConcurrency), strconv.Itoa(j.Pending), strconv.Itoa(j.Scheduled))
			}
			return t.write(out.stdout)
		})
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
	t := newTable(out.width, "NAME", "REMOVED AT")
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
	var before string
	return clientCommand(ctx, "scheduler runs JOB [--limit N] [--before RUN_ID]", args, stdout, stderr, 1, 1,
		func(fs *flag.FlagSet) {
			fs.IntVar(&limit, "limit", 20, "how many runs, newest first (1 to 1000)")
			fs.StringVar(&before, "before", "", "only runs recorded before `RUN_ID`'s (the page further back)")
		},
		func(ctx context.Context, c *client.Client, pos []string, out output) error {
			if limit < 1 || limit > 1000 {
				return fmt.Errorf("%w: --limit %d: want 1 to 1000", errUsage, limit)
			}
			list, err := c.Runs(ctx, pos[0], limit, before)
			if err != nil {
				return err
			}
			if out.json {
				return writeRaw(out.stdout, raws(list, func(r client.Run) json.RawMessage { return r.Raw }))
			}
			withInput := false
			for _, r := range list {
				withInput = withInput || inputCell(r.Input) != "-"
			}
			header := []string{"RUN ID", "TRIGGER", "SCHEDULED AT", "STARTED AT", "TOOK", "OUTCOME", "EXIT", "HOLDER", "ERROR"}
			if withInput {
				header = append(header, "INPUT")
			}
			t := newTable(out.width, header...).shrink(8, 9)
			for _, r := range list {
				row := []string{r.RunID, r.Trigger, stamp(r.ScheduledAt), stamp(r.StartedAt), took(r.StartedAt, r.EndedAt),
					r.Outcome, exitCell(r), r.Holder, r.Error}
				if withInput {
					row = append(row, inputCell(r.Input))
				}
				t.add(row...)
			}
			return t.write(out.stdout)
		})
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
	return clientCommand(ctx, "scheduler leader", args, stdout, stderr, 0, 0, nil,
		func(ctx context.Context, c *client.Client, _ []string, out output) error {
			l, err := c.Leader(ctx)
			if err != nil {
				return err
			}
			if out.json {
				return writeRaw(out.stdout, l.Raw)
			}
			t := newTable(out.width, "ID", "API ADDR", "SINCE", "REVISION")
			t.add(l.ID, l.APIAddr, stamp(l.Since), strconv.FormatInt(l.Revision, 10))
			return t.write(out.stdout)
		})
}

// membersCommand: scheduler members.
func membersCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return clientCommand(ctx, "scheduler members", args, stdout, stderr, 0, 0, nil,
		func(ctx context.Context, c *client.Client, _ []string, out output) error {
			list, err := c.Members(ctx)
			if err != nil {
				return err
			}
			if out.json {
				return writeRaw(out.stdout, raws(list, func(m client.Member) json.RawMessage { return m.Raw }))
			}
			t := newTable(out.width, "ID", "API ADDR", "VERSION", "CONFIG HASH", "STARTED AT", "LEADER")
			for _, m := range list {
				t.add(m.ID, m.APIAddr, m.Version, m.ConfigHash, stamp(m.StartedAt), strconv.FormatBool(m.IsLeader))
			}
			return t.write(out.stdout)
		})
}

// slotsCommand: scheduler slots.
func slotsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return clientCommand(ctx, "scheduler slots", args, stdout, stderr, 0, 0, nil,
		func(ctx context.Context, c *client.Client, _ []string, out output) error {
			list, err := c.Slots(ctx)
			if err != nil {
				return err
			}
			if out.json {
				return writeRaw(out.stdout, raws(list, func(s client.Slot) json.RawMessage { return s.Raw }))
			}
			t := newTable(out.width, "JOB", "RESOURCE", "SLOT", "RUN ID", "HOLDER", "FENCING TOKEN", "SCHEDULED AT", "STARTED AT")
			for _, s := range list {
				t.add(s.Job, s.Resource, strconv.Itoa(s.Slot), s.RunID, s.Holder, strconv.FormatInt(s.FencingToken, 10),
					stamp(s.ScheduledAt), stamp(s.StartedAt))
			}
			return t.write(out.stdout)
		})
}
