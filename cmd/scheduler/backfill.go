package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/etcdsched/scheduler/client"
)

// maxListed is how many run ids a backfill's sentence names.
const maxListed = 10

// backfillCommand: scheduler backfill JOB --from T --to T [--wait].
func backfillCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var fromArg, toArg string
	var wait bool
	var waitFor time.Duration
	return clientCommand(ctx, "scheduler backfill JOB --from T --to T [--wait [--wait-timeout D]]", args, stdout, stderr, 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&fromArg, "from", "", "first instant of the range, `T` an RFC 3339 time such as 2026-11-24T02:00:00Z")
			fs.StringVar(&toArg, "to", "", "end of the range (not included), `T` an RFC 3339 time, not in the future")
			fs.BoolVar(&wait, "wait", false, "wait until every queued run has finished; exit 0 only if all succeeded")
			fs.DurationVar(&waitFor, "wait-timeout", time.Hour, "give up waiting after `D`")
		},
		func(ctx context.Context, c *client.Client, pos []string, out output) error {
			from, err := timeArg("--from", fromArg)
			if err != nil {
				return err
			}
			to, err := timeArg("--to", toArg)
			if err != nil {
				return err
			}
			res, err := c.Backfill(ctx, pos[0], from, to)
			if err != nil {
				return err
			}
			if out.json {
				if err := writeRaw(out.stdout, res.Raw); err != nil {
					return err
				}
			} else {
				writeBackfill(out.stdout, res)
			}
			if !wait || len(res.Queued) == 0 {
				return nil
			}
			ctx, cancel := context.WithTimeout(ctx, waitFor)
			defer cancel()
			return waitBackfill(ctx, c, res.Queued, out)
		})
}

// timeArg reads an RFC 3339 flag value; a missing or bad one is a usage
// error.
func timeArg(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, fmt.Errorf("%w: %s is required: an RFC 3339 time like 2026-11-24T02:00:00Z", errUsage, flag)
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s %q is not an RFC 3339 time like 2026-11-24T02:00:00Z", errUsage, flag, v)
	}
	return t, nil
}

// writeBackfill says in a sentence per list what became of the ticks.
func writeBackfill(w io.Writer, r client.Backfilled) {
	span := fmt.Sprintf("from %s to %s", r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339))
	if len(r.Queued)+len(r.SkippedExisting)+len(r.LeftToSchedule) == 0 {
		fmt.Fprintf(w, "Job %s has no ticks %s; nothing queued.\n", r.Job, span)
		return
	}
	fmt.Fprintf(w, "Queued %s of job %s %s%s.\n", plural(len(r.Queued), "run"), r.Job, span, listed(r.Queued))
	if n := len(r.SkippedExisting); n > 0 {
		fmt.Fprintf(w, "Skipped %s that already ran, run or are queued%s.\n", plural(n, "tick"), listed(r.SkippedExisting))
	}
	if n := len(r.LeftToSchedule); n > 0 {
		fmt.Fprintf(w, "Left %s to the schedule, which has not reached them yet%s.\n", plural(n, "tick"), listed(r.LeftToSchedule))
	}
}

// waitBackfill waits for each queued run's final record and tells the
// outcomes; errReported when one did not succeed.
func waitBackfill(ctx context.Context, c *client.Client, ids []string, out output) error {
	outcomes := map[string]int{}
	for _, id := range ids {
		run, err := c.Wait(ctx, id, waitInterval)
		if err != nil {
			fmt.Fprintf(out.stderr, "scheduler: %d of %d backfilled runs finished before the wait ended\n", sum(outcomes), len(ids))
			return err
		}
		outcomes[string(run.Outcome)]++
	}
	if !out.json {
		fmt.Fprintf(out.stdout, "All %s finished: %s.\n", plural(len(ids), "backfilled run"), counts(outcomes))
	}
	if outcomes[string(client.OutcomeSucceeded)] != len(ids) {
		return errReported
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// listed is ": a, b, c" with at most maxListed ids, and how many more.
func listed(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	shown := ids[:min(len(ids), maxListed)]
	s := ": " + strings.Join(shown, ", ")
	if more := len(ids) - len(shown); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// counts is "2 succeeded, 1 failed", outcomes in name order.
func counts(m map[string]int) string {
	names := make([]string, 0, len(m))
	for o := range m {
		names = append(names, o)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, o := range names {
		parts[i] = fmt.Sprintf("%d %s", m[o], strings.ReplaceAll(o, "_", " "))
	}
	return strings.Join(parts, ", ")
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
