package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/etcdsched/scheduler/internal/client"
)

// pauseCommand: scheduler pause JOB, or scheduler resume JOB when resume.
func pauseCommand(ctx context.Context, resume bool, args []string, stdout, stderr io.Writer) int {
	verb, call := "pause", (*client.Client).Pause
	if resume {
		verb, call = "resume", (*client.Client).Resume
	}
	return clientCommand(ctx, "scheduler "+verb+" JOB", args, stdout, stderr, 1, 1, nil,
		func(ctx context.Context, c *client.Client, pos []string, out output) error {
			j, err := call(c, ctx, pos[0])
			if err != nil {
				return err
			}
			if out.json {
				return writeRaw(out.stdout, j.Raw)
			}
			state := "paused"
			if !j.Paused {
				state = "active, next run " + stamp(j.NextRun)
			}
			_, err = fmt.Fprintf(out.stdout, "%s: %s\n", j.Name, state)
			return err
		})
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
