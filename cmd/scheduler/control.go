package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/etcdsched/scheduler/client"
)

// pauseCommand: scheduler pause JOB [--reason R] [--until T].
func pauseCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var reason, until string
	return clientCommand(ctx, "scheduler pause JOB [--reason R] [--until T]", args, stdout, stderr, 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&reason, "reason", "", "why, shown with the job while it is paused")
			fs.StringVar(&until, "until", "", "resume by itself at `T`, an RFC 3339 time such as 2026-11-25T18:00:00Z")
		},
		func(ctx context.Context, c *client.Client, pos []string, out output) error {
			opts := client.PauseOptions{Reason: reason}
			if until != "" {
				t, err := time.Parse(time.RFC3339, until)
				if err != nil {
					return fmt.Errorf("%w: --until %q is not an RFC 3339 time like 2026-11-25T18:00:00Z", errUsage, until)
				}
				opts.Until = t
			}
			j, err := c.Pause(ctx, pos[0], opts)
			return printPause(out, j, err)
		})
}

// resumeCommand: scheduler resume JOB.
func resumeCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return clientCommand(ctx, "scheduler resume JOB", args, stdout, stderr, 1, 1, nil,
		func(ctx context.Context, c *client.Client, pos []string, out output) error {
			j, err := c.Resume(ctx, pos[0])
			return printPause(out, j, err)
		})
}

// printPause prints a job's state after a pause or resume.
func printPause(out output, j client.Job, err error) error {
	if err != nil {
		return err
	}
	if out.json {
		return writeRaw(out.stdout, j.Raw)
	}
	_, err = fmt.Fprintf(out.stdout, "%s: %s\n", j.Name, pauseState(j))
	return err
}

// pauseState says whether a job is paused, why and until when.
func pauseState(j client.Job) string {
	if !j.Paused {
		return "active, next run " + stamp(j.NextRun)
	}
	s := "paused"
	if j.PauseReason != "" {
		s += " (" + j.PauseReason + ")"
	}
	if !j.PausedUntil.IsZero() {
		s += " until " + stamp(j.PausedUntil)
	}
	return s
}

// cancelCommand: scheduler cancel RUN_ID [--reason TEXT].
func cancelCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var reason string
	return clientCommand(ctx, "scheduler cancel RUN_ID", args, stdout, stderr, 1, 1,
		func(fs *flag.FlagSet) {
			fs.StringVar(&reason, "reason", "", "why, kept in the run's record")
		},
		func(ctx context.Context, c *client.Client, pos []string, out output) error {
			res, err := c.Cancel(ctx, pos[0], reason)
			if err != nil {
				return err
			}
			if out.json {
				return writeRaw(out.stdout, res.Raw)
			}
			_, err = fmt.Fprintf(out.stdout, "%s: cancel requested\n", pos[0])
			return err
		})
}
